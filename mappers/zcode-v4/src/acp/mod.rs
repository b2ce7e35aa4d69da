//! The conversation as ACP shows it: rows as session updates ([`track`]), when a turn ends
//! ([`turn`]), pending interactions as permission requests and forms ([`interactions`]), the
//! session's settings as modes and config options ([`settings`]), the todo plan and plan
//! proposals ([`plan`]), and how a tool call looks ([`tools`]). The Services mapper maps a
//! session with all of it, and so can the next generation that speaks V4 only; the app-server
//! mapper, where V4 rides next to the legacy events, keeps its own watch of one turn.

pub mod interactions;
pub mod plan;
pub mod settings;
pub mod tools;
pub mod track;
pub mod turn;

use serde_json::Value;

/// JSON text of `value` (serde_json never fails on a `Value`). Large texts are measured first
/// and written into a buffer of exactly their size: a growing buffer doubles, and while it is
/// copied holds its old and new blocks, which for a multi-MiB update was most of the memory a
/// call may use (F-20).
pub fn text(value: &Value) -> String {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).expect("a Value always serializes");
    let mut out = Vec::with_capacity(count.0);
    serde_json::to_writer(&mut out, value).expect("a Value always serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}
