//! Which topics a command works on: by name and by pattern, one rule for every command that
//! selects (`play`, `convert`, `echo`).

use crate::error::{BagError, Result};
use crate::Bag;

/// Which topics to keep: named ones and those matching a pattern (all when neither is given),
/// less the excluded names and those matching the exclusion pattern.
#[derive(Debug, Clone, Default)]
pub struct TopicFilter {
    /// Keep these topics (exact names; every one must exist).
    pub topics: Vec<String>,
    /// Keep the topics whose name matches this regular expression (anywhere in the name, as
    /// `ros2 bag`'s `--regex`: `^`/`$` anchor it).
    pub regex: Option<String>,
    /// Leave these topics out (exact names; every one must exist).
    pub exclude_topics: Vec<String>,
    /// Leave out the topics whose name matches this regular expression.
    pub exclude_regex: Option<String>,
}

impl TopicFilter {
    /// Per topic of `bag`: kept or not. An unknown name or an invalid pattern is an error
    /// naming it.
    pub fn wanted(&self, bag: &Bag) -> Result<Vec<bool>> {
        let re = |p: &Option<String>, flag: &str| -> Result<Option<regex::Regex>> {
            p.as_deref()
                .map(|p| {
                    regex::Regex::new(p).map_err(|e| BagError::InvalidPattern {
                        flag: flag.to_string(),
                        pattern: p.to_string(),
                        reason: e.to_string(),
                    })
                })
                .transpose()
        };
        let keep = re(&self.regex, "--regex")?;
        let drop = re(&self.exclude_regex, "--exclude-regex")?;
        let mut named = vec![false; bag.topics.len()];
        for n in &self.topics {
            named[bag.topic_index(n)?] = true;
        }
        let mut excluded = vec![false; bag.topics.len()];
        for n in &self.exclude_topics {
            excluded[bag.topic_index(n)?] = true;
        }
        let all = self.topics.is_empty() && keep.is_none();
        Ok(bag
            .topics
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let kept = all || named[i] || keep.as_ref().is_some_and(|r| r.is_match(&t.name));
                let dropped = excluded[i] || drop.as_ref().is_some_and(|r| r.is_match(&t.name));
                kept && !dropped
            })
            .collect())
    }
}
