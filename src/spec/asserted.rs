//! What a spec case asserts, in the terms of a trajectory diff ([`Asserted`]): the tools,
//! positions, argument paths, replies and schemas its `expect` blocks depend on.

use crate::trajectory::asserted::{Asserted, Scope, ToolScope};

use super::{CallExpr, Case, Expect, Order};

/// What `case` asserts: its turns' `expect` blocks, each with the case-level `expect`
/// merged in (it sees the whole conversation; its `reply` and `output` are the last turn's).
pub fn asserted(case: &Case) -> Asserted {
    let mut rest = Scope::default();
    if let Some(e) = &case.expect {
        add(&mut rest, e);
        rest.reply = false;
    }
    let last = case.turns.len().saturating_sub(1);
    let turns = case
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut s = Scope::default();
            if let Some(e) = &t.expect {
                add(&mut s, e);
            }
            if let Some(e) = &case.expect {
                add(&mut s, e);
                s.reply = s.reply && (i == last || t.expect.as_ref().is_some_and(asserts_reply));
            }
            s
        })
        .collect();
    Asserted {
        case: Some(case.name.clone()),
        everything: false,
        turns,
        rest,
    }
}

fn asserts_reply(e: &Expect) -> bool {
    e.reply.is_some() || e.output.is_some()
}

fn add(s: &mut Scope, e: &Expect) {
    let calls = e.calls.as_deref().unwrap_or_default();
    s.any_call |= e.strict || e.count.is_some() || e.calls.as_ref().is_some_and(Vec::is_empty);
    s.exact_order |= e.order == Order::Exact;
    s.reply |= asserts_reply(e);
    for c in calls {
        let t = tool(s, c);
        t.ordered |= e.order != Order::Unordered;
    }
    for c in e
        .never
        .iter()
        .chain(e.executed.iter().flatten())
        .chain(&e.not_executed)
    {
        tool(s, c);
    }
}

/// The scope of the tool `c` names, with what its matcher checks added.
fn tool<'a>(s: &'a mut Scope, c: &CallExpr) -> &'a mut ToolScope {
    let t = s.tools.entry(c.tool.clone()).or_default();
    if let Some(args) = &c.args {
        let touched = args.matcher.touched();
        t.paths.extend(touched.paths);
        t.schema |= touched.schema;
        t.paths.sort();
        t.paths.dedup();
    }
    t
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::spec;
    use crate::trajectory::asserted::Asserted;

    fn case(yaml: &str) -> Case {
        let src = format!("app: {{command: x}}\ncases:\n{yaml}");
        let sp = spec::parse(&src, Path::new("t.yaml")).unwrap();
        sp.cases.into_iter().next().unwrap()
    }

    fn p(s: &str) -> Vec<String> {
        s.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn single_turn_case() {
        let a = asserted(&case(
            "  - name: book\n    input: go\n    expect:\n      calls:\n        - search_flights\n        - create_booking: {passengers.0.name: Zoë, flight: {regex: '^LX'}}\n      never: [delete_account]\n      reply: booked\n",
        ));
        assert_eq!(a.case.as_deref(), Some("book"));
        assert!(a.presence(0, "create_booking") && a.presence(0, "delete_account"));
        assert!(!a.presence(0, "check_visa"));
        assert!(a.position(0, "search_flights") && !a.position(0, "delete_account"));
        assert!(a.argument(0, "create_booking", &p("passengers.0.name")));
        assert!(a.argument(0, "create_booking", &p("passengers")));
        assert!(!a.argument(0, "create_booking", &p("passengers.0.passport")));
        assert!(a.argument(0, "create_booking", &p("flight")));
        // `search_flights` is named with any arguments: its arguments are not asserted.
        assert!(!a.argument(0, "search_flights", &p("to")));
        assert!(a.reply(0));
        // Turns the spec does not list see only the case-level expect (none here).
        assert!(!a.reply(3) && !a.presence(3, "create_booking"));
        assert!(!a.schema("create_booking"));
    }

    #[test]
    fn strict_count_unordered_and_case_level() {
        let a = asserted(&case(
            "  - name: two\n    turns:\n      - input: a\n        expect: {calls: [get_weather], order: unordered}\n      - input: b\n        expect: {calls: []}\n    expect:\n      never: [{send_email: {to: {schema_valid: true}}}]\n      reply: done\n",
        ));
        assert!(!a.position(0, "get_weather"));
        assert!(a.presence(1, "anything"), "calls: [] asserts every call");
        assert!(a.presence(0, "send_email") && a.presence(5, "send_email"));
        assert!(a.argument(1, "send_email", &p("to")));
        assert!(a.schema("send_email"));
        assert!(
            !a.reply(0) && a.reply(1),
            "case-level reply is the last turn's"
        );
        let all = Asserted::everything();
        assert!(all.presence(0, "x") && all.argument(2, "x", &p("y")) && all.reply(9));
        assert!(!all.schema("x"));
        assert!(!Asserted::none().presence(0, "x"));
    }
}
