//! Outputs: values that may not be known until the engine has done its work.

use super::applies;
use crate::Value;

/// A value that is either known now or a reference to another registration's output, which the
/// engine resolves. Pass it as a resource input or a stack export, or transform it with
/// [`apply`](Output::apply).
///
/// An `Output` never blocks: reading the actual value happens inside `apply` closures, which the
/// engine runs once the value is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Output(Value);

impl Output {
    /// An output whose value is known now.
    pub fn new(value: impl Into<Value>) -> Output {
        Output(value.into())
    }

    /// True if the value is known now (it refers to nothing unresolved).
    pub fn is_known(&self) -> bool {
        self.0.is_known()
    }

    /// The value, which may hold references to other registrations' outputs.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// Transforms the value with `f` once it is known.
    ///
    /// If the value is known now, `f` runs at once. Otherwise the closure is kept until the
    /// engine resumes it with the resolved value; the returned output refers to its result. `f`
    /// may return a value or another output. During a preview, an unknown value makes the result
    /// unknown and `f` does not run. A secret value is passed to `f` revealed and the result is a
    /// secret.
    pub fn apply<R: Into<Value>>(self, f: impl FnOnce(Value) -> R + 'static) -> Output {
        Output(applies::apply(
            vec![self.0],
            Box::new(move |values| f(values.into_iter().next().unwrap_or_default()).into()),
        ))
    }

    /// Combines several values so that one closure can use them all:
    /// `Output::all(vec![a, b]).apply(|values| ...)`.
    pub fn all<O: Into<Value>>(outputs: impl IntoIterator<Item = O>) -> AllOutputs {
        AllOutputs(outputs.into_iter().map(Into::into).collect())
    }
}

/// An output serializes as its value: with [`to_value`](crate::to_value), a reference to another
/// resource's output stays one.
impl serde::Serialize for Output {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl From<Output> for Value {
    fn from(output: Output) -> Value {
        output.0
    }
}

/// Several values awaiting one closure; made by [`Output::all`].
#[derive(Debug, Clone, PartialEq)]
pub struct AllOutputs(Vec<Value>);

impl AllOutputs {
    /// Transforms the values with `f` once they are all known; `f` receives them in order. The
    /// rules of [`Output::apply`] apply.
    pub fn apply<R: Into<Value>>(self, f: impl FnOnce(Vec<Value>) -> R + 'static) -> Output {
        Output(applies::apply(
            self.0,
            Box::new(move |values| f(values).into()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_apply_at_once() {
        let out = Output::new(2).apply(|v| v.as_f64().unwrap_or(0.0) * 21.0);
        assert!(out.is_known());
        assert_eq!(Value::from(out), Value::from(42));
    }

    #[test]
    fn all_passes_values_in_order() {
        let out = Output::all(vec![Output::new("a"), Output::new("b")]).apply(|values| {
            format!(
                "{:?}",
                values.iter().map(|v| v.as_str()).collect::<Vec<_>>()
            )
        });
        assert_eq!(out.as_value().as_str(), Some(r#"[Some("a"), Some("b")]"#));
    }

    #[test]
    fn closures_may_return_outputs() {
        let out = Output::new(1).apply(|_| Output::new("inner"));
        assert_eq!(out.as_value(), &Value::from("inner"));
    }
}
