//! What two or more protocol generations share: the clock, the sign-in state, the single
//! stdout writer, the scripted model (scenarios) and the model catalogue of the GLM releases.

pub mod auth;
pub mod base64;
pub mod catalog;
pub mod clock;
pub mod fault;
pub mod output;
pub mod process;
pub mod scenario;
pub mod store;
pub mod turn;
