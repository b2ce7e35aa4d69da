//! Locking, for every module of the bridge.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex even if a panicking thread poisoned it: every critical section here leaves
/// the data consistent, and the bridge must still be able to fail closed and kill its child.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
