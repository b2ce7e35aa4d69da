//! Events that cross into a session as one input: a connection joins the texts of events for
//! one route, one a line ([`add`]), and the session takes them apart again ([`lines`]) and maps
//! each as it would map an event of its own.
//!
//! A read of the host's output holds a few hundred streamed deltas. Joined, they cross from
//! the connection into the core, queue, and cross into the session as one input instead of
//! hundreds (issue 27). It holds only because an event's text never holds a raw newline: the
//! hosts' frames are single lines, and a tree is written compact.

use zcode_contract::{Inbound, NativeData, RoutedEvent};

/// Appends `frame` to `inbound`. An event with a text is joined to the last event for its
/// route, on a line after that event's text, when every frame after that one is one
/// `may_pass(earlier, route)` lets an event for `route` go ahead of; any other frame is
/// appended. `may_pass` says where the order does not matter to the routes' holders:
/// `|_, _| false` joins consecutive events only.
pub fn add(inbound: &mut Vec<Inbound>, frame: Inbound, may_pass: impl Fn(&Inbound, &str) -> bool) {
    if let Inbound::Event(RoutedEvent { route, payload: NativeData::Text(text) }) = &frame
        && let Some(joined) = joinable(inbound, route, may_pass)
    {
        joined.push('\n');
        joined.push_str(text);
        return;
    }
    inbound.push(frame);
}

/// [`add`] of an event for `route` with `text`, borrowed: both are copied once, into the input
/// that holds them, and the route only where the event starts one.
pub fn add_event(
    inbound: &mut Vec<Inbound>,
    route: &str,
    text: &str,
    may_pass: impl Fn(&Inbound, &str) -> bool,
) {
    match joinable(inbound, route, may_pass) {
        Some(joined) => {
            joined.push('\n');
            joined.push_str(text);
        }
        None => inbound.push(Inbound::Event(RoutedEvent {
            route: route.to_string(),
            payload: NativeData::Text(text.to_string()),
        })),
    }
}

/// The text of the input an event for `route` joins, if there is one (see [`add`]).
fn joinable<'i>(
    inbound: &'i mut [Inbound],
    route: &str,
    may_pass: impl Fn(&Inbound, &str) -> bool,
) -> Option<&'i mut String> {
    let at = inbound.iter().rposition(|earlier| match earlier {
        Inbound::Event(event) if event.route == route => true,
        other => !may_pass(other, route),
    })?;
    match &mut inbound[at] {
        Inbound::Event(RoutedEvent { route: found, payload: NativeData::Text(joined) })
            if found == route =>
        {
            Some(joined)
        }
        _ => None,
    }
}

/// The texts of the events an input joins, in order (an event's own text, if it is one).
pub fn lines(text: &str) -> std::str::Split<'_, char> {
    text.split('\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use zcode_contract::{NativeReply, ReplyBody};

    fn event(route: &str, text: &str) -> Inbound {
        Inbound::Event(RoutedEvent { route: route.to_string(), payload: text.to_string().into() })
    }

    fn reply(id: u64) -> Inbound {
        Inbound::Reply(NativeReply { id, body: ReplyBody::Lost("test".to_string()) })
    }

    fn joined(frames: Vec<Inbound>, may_pass: impl Fn(&Inbound, &str) -> bool) -> Vec<Inbound> {
        let mut inbound = Vec::new();
        frames.into_iter().for_each(|frame| add(&mut inbound, frame, &may_pass));
        inbound
    }

    #[test]
    fn consecutive_events_for_one_route_are_joined_in_order() {
        let frames = vec![event("a", "1"), event("a", "2"), event("b", "3"), event("a", "4")];
        assert_eq!(
            joined(frames, |_, _| false),
            vec![event("a", "1\n2"), event("b", "3"), event("a", "4")]
        );
    }

    #[test]
    fn a_reply_binary_data_and_what_may_not_be_passed_end_a_run() {
        let binary = Inbound::Event(RoutedEvent {
            route: "a".to_string(),
            payload: NativeData::Binary(vec![1]),
        });
        let frames = vec![
            event("a", "1"),
            reply(7),
            event("a", "2"),
            binary.clone(),
            event("a", "3"),
            event("b", "4"),
            event("a", "5"),
        ];
        assert_eq!(
            joined(frames, |_, _| false),
            vec![
                event("a", "1"),
                reply(7),
                event("a", "2"),
                binary,
                event("a", "3"),
                event("b", "4"),
                event("a", "5")
            ]
        );
    }

    #[test]
    fn an_event_goes_ahead_of_what_it_may_pass() {
        let passable = |earlier: &Inbound, next: &str| {
            next == "a" && matches!(earlier, Inbound::Event(e) if e.route == "b")
        };
        let frames = vec![
            event("a", "1"),
            event("b", "x"),
            event("a", "2"),
            event("b", "y"),
            event("a", "3"),
            event("c", "z"),
            event("a", "4"),
        ];
        assert_eq!(
            joined(frames, passable),
            vec![event("a", "1\n2\n3"), event("b", "x\ny"), event("c", "z"), event("a", "4")]
        );
    }

    /// An event given by its route and text joins as the same event would.
    #[test]
    fn a_borrowed_event_joins_as_an_event_does() {
        let frames = vec![event("a", "1"), reply(7), event("a", "2"), event("a", "3")];
        let mut borrowed = Vec::new();
        for frame in frames.clone() {
            match &frame {
                Inbound::Event(RoutedEvent { route, payload: NativeData::Text(text) }) => {
                    add_event(&mut borrowed, route, text, |_, _| false)
                }
                _ => borrowed.push(frame),
            }
        }
        assert_eq!(borrowed, joined(frames, |_, _| false));
        assert_eq!(borrowed[2], event("a", "2\n3"));
    }

    #[test]
    fn lines_give_back_each_joined_text() {
        assert_eq!(
            lines("{\"a\":1}\n{\"b\":\"x\\ny\"}").collect::<Vec<_>>(),
            ["{\"a\":1}", "{\"b\":\"x\\ny\"}"]
        );
        assert_eq!(lines("alone").collect::<Vec<_>>(), ["alone"]);
    }
}
