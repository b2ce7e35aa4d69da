//! ZCode's V4 conversation protocol (`packages/shared/src/zcode-protocol-v4/*`), which the
//! Desktop app-server and the Services Server both speak: the log a session publishes
//! (`publisher.rs`), the physical wire frames carry it in (`wire.rs`), the command
//! vocabulary (`commands.rs`) and the inbox that admits commands (`inbox.rs`), what a session
//! allows (`availability.rs`), what it waits on the client for (`pending.rs`),
//! `forkAssistant`'s rows and cut (`fork.rs`), what a tool row keeps of its output (`rows.rs`),
//! the rows a turn writes (`turn.rs`) and the shapes of the A zone's values (`zone.rs`). Each
//! server adds only its transport, its own commands and its turn's script.

pub mod availability;
pub mod commands;
pub mod fork;
pub mod inbox;
pub mod pending;
pub mod publisher;
pub mod rows;
pub mod turn;
pub mod wire;
pub mod zone;
