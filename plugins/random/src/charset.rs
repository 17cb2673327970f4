//! Random strings from character classes, with minimum counts per class — the algorithm of
//! Terraform's `random_string`: first the minimums, then the rest from every enabled class,
//! then a shuffle.

use plinth_sdk::CheckFailure;
use rand::seq::SliceRandom;
use rand::{Rng, RngExt};

pub(crate) const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub(crate) const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
pub(crate) const NUMERIC: &str = "0123456789";
/// The special characters used unless `override_special` is given.
pub(crate) const SPECIAL: &str = "!@#$%&*()-_=+[]{}<>:?";

/// One character class: its characters, whether it is in the pool for the free characters, and
/// how many characters must come from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Class {
    /// The name of the property that enables the class (`upper`, ...), for messages.
    pub(crate) name: &'static str,
    pub(crate) chars: Vec<char>,
    pub(crate) enabled: bool,
    pub(crate) min: usize,
}

/// What a random string is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rules {
    pub(crate) length: usize,
    pub(crate) classes: Vec<Class>,
}

impl Rules {
    /// Why these rules cannot produce a string.
    pub(crate) fn problems(&self) -> Vec<CheckFailure> {
        let mut problems = Vec::new();
        let required: usize = self.classes.iter().map(|c| c.min).sum();
        if required > self.length {
            problems.push(CheckFailure::new(
                "length",
                format!(
                    "must be at least the sum of min_upper, min_lower, min_numeric and min_special ({required})"
                ),
            ));
        }
        for class in &self.classes {
            if class.min > 0 && class.chars.is_empty() {
                problems.push(CheckFailure::new(
                    format!("min_{}", class.name),
                    format!("needs {} characters, but there are none", class.name),
                ));
            }
        }
        if self.length > required && self.pool().is_empty() {
            problems.push(CheckFailure::new(
                "",
                "upper, lower, numeric and special are all disabled: no characters to choose from",
            ));
        }
        problems
    }

    /// The characters the free (non-minimum) positions are drawn from.
    fn pool(&self) -> Vec<char> {
        self.classes
            .iter()
            .filter(|c| c.enabled)
            .flat_map(|c| c.chars.iter().copied())
            .collect()
    }

    /// Generates a string. The rules must have no [`problems`](Self::problems).
    pub(crate) fn generate<R: Rng + ?Sized>(&self, rng: &mut R) -> String {
        let mut chars = Vec::with_capacity(self.length);
        for class in &self.classes {
            pick(&class.chars, class.min, rng, &mut chars);
        }
        let rest = self.length.saturating_sub(chars.len());
        pick(&self.pool(), rest, rng, &mut chars);
        chars.shuffle(rng);
        chars.into_iter().collect()
    }
}

/// Appends `count` characters drawn uniformly from `from` (nothing if `from` is empty).
fn pick<R: Rng + ?Sized>(from: &[char], count: usize, rng: &mut R, out: &mut Vec<char>) {
    if from.is_empty() {
        return;
    }
    out.extend((0..count).map(|_| from[rng.random_range(0..from.len())]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn class(name: &'static str, chars: &str, enabled: bool, min: usize) -> Class {
        Class {
            name,
            chars: chars.chars().collect(),
            enabled,
            min,
        }
    }

    fn rules(length: usize, mins: [usize; 4], enabled: [bool; 4]) -> Rules {
        Rules {
            length,
            classes: vec![
                class("upper", UPPER, enabled[0], mins[0]),
                class("lower", LOWER, enabled[1], mins[1]),
                class("numeric", NUMERIC, enabled[2], mins[2]),
                class("special", SPECIAL, enabled[3], mins[3]),
            ],
        }
    }

    fn count(s: &str, set: &str) -> usize {
        s.chars().filter(|c| set.contains(*c)).count()
    }

    #[test]
    fn has_the_length_and_only_enabled_classes() {
        let mut rng = StdRng::seed_from_u64(7);
        let r = rules(64, [0; 4], [false, true, true, false]);
        assert!(r.problems().is_empty());
        let s = r.generate(&mut rng);
        assert_eq!(s.chars().count(), 64);
        assert_eq!(count(&s, LOWER) + count(&s, NUMERIC), 64);
    }

    #[test]
    fn meets_the_minimums() {
        for seed in 0..50 {
            let mut rng = StdRng::seed_from_u64(seed);
            let s = rules(8, [2, 0, 3, 1], [false, true, false, false]).generate(&mut rng);
            assert_eq!(s.chars().count(), 8);
            assert!(count(&s, UPPER) >= 2);
            assert!(count(&s, NUMERIC) >= 3);
            assert!(count(&s, SPECIAL) >= 1);
        }
    }

    #[test]
    fn differs_between_runs() {
        let r = rules(16, [0; 4], [true; 4]);
        let a = r.generate(&mut StdRng::seed_from_u64(1));
        let b = r.generate(&mut StdRng::seed_from_u64(2));
        assert_ne!(a, b);
    }

    #[test]
    fn overridden_special_characters_are_used() {
        let mut r = rules(12, [0, 0, 0, 12], [false, false, false, true]);
        r.classes[3].chars = vec!['é', '~'];
        let s = r.generate(&mut StdRng::seed_from_u64(3));
        assert!(s.chars().all(|c| c == 'é' || c == '~'));
    }

    #[test]
    fn reports_impossible_rules() {
        let reasons = |r: Rules| {
            r.problems()
                .into_iter()
                .map(|f| f.property)
                .collect::<Vec<_>>()
        };
        assert_eq!(reasons(rules(3, [1, 1, 1, 1], [true; 4])), vec!["length"]);
        assert_eq!(reasons(rules(3, [0; 4], [false; 4])), vec![""]);
        // Minimums alone may fill the string even with every class disabled.
        assert!(reasons(rules(2, [1, 1, 0, 0], [false; 4])).is_empty());
        let mut r = rules(3, [0, 0, 0, 1], [true; 4]);
        r.classes[3].chars.clear();
        assert_eq!(reasons(r), vec!["min_special"]);
    }
}
