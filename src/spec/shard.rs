//! `--shard k/n`: which cases of a run one CI machine runs. Pure: a case's shard depends
//! only on the shard count and on the case (its spec path and name, or its position).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How cases are dealt to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// By a hash of the spec path and case name: a case stays on its shard when other
    /// cases are added or removed.
    Hash,
    /// By position among the selected cases, round robin: shards differ by at most one
    /// case, but adding a case moves the ones after it.
    Count,
}

/// Shard `index` of `total` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub total: usize,
    pub strategy: Strategy,
}

/// GitLab's convention: `CI_NODE_INDEX` counts from 1 to `CI_NODE_TOTAL`.
pub const ENV_INDEX: &str = "CI_NODE_INDEX";
pub const ENV_TOTAL: &str = "CI_NODE_TOTAL";

impl Shard {
    /// `k/n`, `hash:k/n` or `count:k/n` (`k/n` is `hash:`), with 1 <= k <= n.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (strategy, rest) = match text.split_once(':') {
            Some(("hash", rest)) => (Strategy::Hash, rest),
            Some(("count", rest)) => (Strategy::Count, rest),
            Some((other, _)) => {
                return Err(format!(
                    "unknown shard strategy `{other}`; expected hash:K/N or count:K/N"
                ))
            }
            None => (Strategy::Hash, text),
        };
        let bad = || format!("expected K/N with 1 <= K <= N, such as 2/4; got `{text}`");
        let (k, n) = rest.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let total: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > total {
            return Err(bad());
        }
        Ok(Shard {
            index,
            total,
            strategy,
        })
    }

    /// The shard `CI_NODE_INDEX` / `CI_NODE_TOTAL` name (both set, 1-based), by hash.
    /// `Ok(None)` when neither is set.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
        let get = |name| lookup(name).filter(|v| !v.trim().is_empty());
        match (get(ENV_INDEX), get(ENV_TOTAL)) {
            (None, None) => Ok(None),
            (Some(k), Some(n)) => Shard::parse(&format!("{}/{}", k.trim(), n.trim()))
                .map(Some)
                .map_err(|e| {
                    format!("{ENV_INDEX}={k}, {ENV_TOTAL}={n}: {e} ({ENV_INDEX} counts from 1)")
                }),
            _ => Err(format!(
                "only one of {ENV_INDEX} and {ENV_TOTAL} is set; set both, or pass --shard"
            )),
        }
    }

    /// Whether the case at `position` (0-based, among the selected cases) of spec `spec`
    /// named `name` is this shard's.
    pub fn contains(&self, position: usize, spec: &str, name: &str) -> bool {
        owner(self.strategy, self.total, position, spec, name) == self.index
    }
}

/// The shard (1-based) a case belongs to among `total`.
pub fn owner(strategy: Strategy, total: usize, position: usize, spec: &str, name: &str) -> usize {
    let slot = match strategy {
        Strategy::Count => position % total,
        Strategy::Hash => {
            let digest = Sha256::new()
                .chain_update(spec.as_bytes())
                .chain_update([0])
                .chain_update(name.as_bytes())
                .finalize();
            let mut head = [0u8; 8];
            head.copy_from_slice(&digest[..8]);
            (u64::from_be_bytes(head) % total as u64) as usize
        }
    };
    slot + 1
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let strategy = match self.strategy {
            Strategy::Hash => "hash",
            Strategy::Count => "count",
        };
        write!(f, "{strategy}:{}/{}", self.index, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms_and_refuses_the_rest() {
        let s = Shard::parse("2/3").unwrap();
        assert_eq!((s.index, s.total, s.strategy), (2, 3, Strategy::Hash));
        assert_eq!(Shard::parse("count:1/4").unwrap().strategy, Strategy::Count);
        assert_eq!(Shard::parse("hash:4/4").unwrap().to_string(), "hash:4/4");
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(
                Shard::parse(bad).unwrap_err().contains("1 <= K <= N"),
                "{bad}"
            );
        }
        assert!(Shard::parse("random:1/2")
            .unwrap_err()
            .contains("unknown shard strategy"));
    }

    /// For 1 to 5 shards, by either strategy: the shards' union is every case, and no case
    /// is in two shards.
    #[test]
    fn every_case_lands_in_exactly_one_shard() {
        let cases: Vec<String> = (0..200).map(|i| format!("case {i}")).collect();
        for strategy in [Strategy::Hash, Strategy::Count] {
            for total in 1..=5 {
                let mut sizes = vec![0usize; total];
                for (p, name) in cases.iter().enumerate() {
                    let shards: Vec<usize> = (1..=total)
                        .filter(|&index| {
                            let shard = Shard {
                                index,
                                total,
                                strategy,
                            };
                            shard.contains(p, "specs/a.yaml", name)
                        })
                        .collect();
                    assert_eq!(shards.len(), 1, "{name} in {total} shards: {shards:?}");
                    sizes[shards[0] - 1] += 1;
                }
                assert_eq!(sizes.iter().sum::<usize>(), cases.len());
                // Round robin is exact; a hash spreads 200 cases roughly evenly.
                let even = cases.len() / total;
                let slack = if strategy == Strategy::Count {
                    1
                } else {
                    even / 3
                };
                assert!(
                    sizes.iter().all(|&n| n.abs_diff(even) <= slack),
                    "{strategy:?} {total}: {sizes:?}"
                );
            }
        }
    }

    #[test]
    fn a_hashed_case_keeps_its_shard_when_cases_are_added() {
        let before = owner(Strategy::Hash, 3, 0, "s.yaml", "paris");
        assert_eq!(owner(Strategy::Hash, 3, 7, "s.yaml", "paris"), before);
        // Fixed across builds and platforms: sha256 of the spec path and name.
        assert_eq!(owner(Strategy::Hash, 1000, 0, "s.yaml", "paris"), {
            let d = Sha256::digest(b"s.yaml\0paris");
            (u64::from_be_bytes(d[..8].try_into().unwrap()) % 1000) as usize + 1
        });
    }

    #[test]
    fn the_environment_names_a_one_based_shard() {
        let env = |k: &'static str, n: &'static str| {
            move |name: &str| match name {
                ENV_INDEX => Some(k.to_owned()),
                ENV_TOTAL => Some(n.to_owned()),
                _ => None,
            }
        };
        assert_eq!(
            Shard::from_env(&env("2", "3")).unwrap(),
            Some(Shard::parse("hash:2/3").unwrap())
        );
        assert!(Shard::from_env(&env("0", "3"))
            .unwrap_err()
            .contains("counts from 1"));
        assert!(Shard::from_env(&env("", "3"))
            .unwrap_err()
            .contains("only one of"));
        assert_eq!(Shard::from_env(&|_| None), Ok(None));
    }
}
