//! Which parts of a value a compiled matcher looks at: the argument paths a spec asserts,
//! so a trajectory diff can tell an asserted argument change from an incidental one.

use super::matchers::{Field, Matcher, Node, Op};

/// The places a matcher checks: each a path of segments from the checked value's root
/// (`["passengers", "0", "name"]`; `[]` is the value itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched {
    /// A path is listed when the matcher checks the value there as a whole (equality,
    /// an operator, a bare array's length and elements), so a change at or below it
    /// is asserted. Keys a partial object match does not list are not touched.
    pub paths: Vec<Vec<String>>,
    /// The matcher uses `schema_valid`, so it depends on the tool's schema.
    pub schema: bool,
}

impl Matcher {
    /// The paths this matcher checks; see [`Touched`].
    pub fn touched(&self) -> Touched {
        let mut out = Touched::default();
        node(&self.node, &mut Vec::new(), &mut out);
        out.paths.sort();
        out.paths.dedup();
        out
    }
}

fn node(n: &Node, at: &mut Vec<String>, out: &mut Touched) {
    match n {
        Node::Fields(fields) => self::fields(fields, at, out),
        Node::Ops(ops) => ops.iter().for_each(|op| self::op(op, at, out)),
        // A bare array asserts its length too: any change under it counts.
        Node::Equals(_) | Node::Elements(_) => out.paths.push(at.clone()),
    }
}

fn fields(fields: &[Field], at: &mut Vec<String>, out: &mut Touched) {
    for f in fields {
        let depth = at.len();
        at.extend(f.path.iter().cloned());
        node(&f.node, at, out);
        at.truncate(depth);
    }
}

fn op(o: &Op, at: &mut Vec<String>, out: &mut Touched) {
    match o {
        Op::Not(n) => node(n, at, out),
        Op::AnyOf(ns) | Op::AllOf(ns) => ns.iter().for_each(|n| node(n, at, out)),
        Op::Fields(fs) => fields(fs, at, out),
        Op::SchemaValid => {
            out.schema = true;
            out.paths.push(at.clone());
        }
        _ => out.paths.push(at.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn touched(expr: serde_json::Value) -> Touched {
        Matcher::compile(&expr).unwrap().touched()
    }

    fn p(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn paths_of_fields_operators_and_nesting() {
        let t = touched(json!({
            "city": {"contains": "Paris"},
            "passengers.0.name": "Zoë",
            "options": {"seat": {"not": "middle"}},
            "days": {"any_of": [{"gt": 1}, {"fields": {"type": "x"}}]},
            "tags": ["a", "b"]
        }));
        assert_eq!(
            t.paths,
            vec![
                p(&["city"]),
                p(&["days"]),
                p(&["days", "type"]),
                p(&["options", "seat"]),
                p(&["passengers", "0", "name"]),
                p(&["tags"]),
            ]
        );
        assert!(!t.schema);
        assert_eq!(touched(json!({})).paths, Vec::<Vec<String>>::new());
        let t = touched(json!({"schema_valid": true}));
        assert!(t.schema);
        assert_eq!(t.paths, vec![Vec::<String>::new()]);
        assert_eq!(touched(json!({"a\\.b": 1})).paths, vec![p(&["a.b"])]);
    }
}
