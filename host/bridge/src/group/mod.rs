//! The child's process group: signalling it as a whole and knowing when it is empty.
//!
//! On unix the child leads a group of its own, so every process it starts (a worker, a
//! grandchild that ignores SIGTERM) is signalled with it. Elsewhere only the child itself can be
//! killed; docs/host-bridge.md describes the job-object design that would close that gap.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::ProcessGroup;

#[cfg(not(unix))]
mod other;
#[cfg(not(unix))]
pub(crate) use other::ProcessGroup;
