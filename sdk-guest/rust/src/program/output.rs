//! Outputs: values that may not be known until the engine has done its work; and [`Input`]s,
//! what a typed resource's input accepts: a value or another resource's output.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::applies;
use crate::{Value, from_value};

/// A value that is either known now or a reference to another registration's output, which the
/// engine resolves. Pass it as a resource input or a stack export, or transform it with
/// [`apply`](Output::apply).
///
/// An `Output` never blocks: reading the actual value happens inside `apply` closures, which the
/// engine runs once the value is known.
///
/// `Output` alone is untyped (`Output<Value>`). A typed output, `Output<T>`, is what generated
/// SDKs return for a property whose type the provider's schema declares (`Output<String>`,
/// `Output<i64>`): its `apply` receives a `T`.
pub struct Output<T = Value> {
    value: Value,
    ty: PhantomData<fn() -> T>,
}

impl Output {
    /// An output whose value is known now.
    pub fn new(value: impl Into<Value>) -> Output {
        Output::wrap(value.into())
    }

    /// Combines several values so that one closure can use them all:
    /// `Output::all(vec![a, b]).apply(|values| ...)`.
    pub fn all<O: Into<Value>>(outputs: impl IntoIterator<Item = O>) -> AllOutputs {
        AllOutputs(outputs.into_iter().map(Into::into).collect())
    }

    /// This output, declared to hold a `T`: what a property of that type resolves to. The type
    /// is checked when the value is used, by [`apply`](Output::apply).
    pub fn typed<T>(self) -> Output<T> {
        Output::wrap(self.value)
    }
}

impl<T> Output<T> {
    fn wrap(value: Value) -> Output<T> {
        Output {
            value,
            ty: PhantomData,
        }
    }

    /// True if the value is known now (it refers to nothing unresolved).
    pub fn is_known(&self) -> bool {
        self.value.is_known()
    }

    /// The value, which may hold references to other registrations' outputs.
    pub fn as_value(&self) -> &Value {
        &self.value
    }

    /// The same output, untyped.
    pub fn untyped(self) -> Output {
        Output::wrap(self.value)
    }
}

impl<T: DeserializeOwned + 'static> Output<T> {
    /// Transforms the value with `f` once it is known.
    ///
    /// If the value is known now, `f` runs at once. Otherwise the closure is kept until the
    /// engine resumes it with the resolved value; the returned output refers to its result. `f`
    /// may return a value or another output. During a preview, an unknown value makes the result
    /// unknown and `f` does not run. A secret value is passed to `f` revealed and the result is a
    /// secret.
    ///
    /// A typed output's value is read as a `T` first; a value that is not one (a provider that
    /// breaks its own schema) stops the program with a message naming both. The result is an
    /// `Output<R>`, which a typed input of type `R` takes as it is (a closure that returns an
    /// output gives an `Output<Output<_>>`: use `.untyped()` or `.typed()` on it).
    pub fn apply<R: Into<Value>>(self, f: impl FnOnce(T) -> R + 'static) -> Output<R> {
        Output::wrap(applies::apply(
            vec![self.value],
            Box::new(move |values| {
                let value = values.into_iter().next().unwrap_or_default();
                let kind = value.kind();
                let typed = from_value::<T>(value).unwrap_or_else(|e| {
                    panic!(
                        "an output declared as {} resolved to {kind}: {e}",
                        std::any::type_name::<T>()
                    )
                });
                f(typed).into()
            }),
        ))
    }
}

impl<T> Clone for Output<T> {
    fn clone(&self) -> Output<T> {
        Output::wrap(self.value.clone())
    }
}

impl<T> PartialEq for Output<T> {
    fn eq(&self, other: &Output<T>) -> bool {
        self.value == other.value
    }
}

impl<T> fmt::Debug for Output<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Output").field(&self.value).finish()
    }
}

/// An output serializes as its value: with [`to_value`](crate::to_value), a reference to another
/// resource's output stays one.
impl<T> Serialize for Output<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

impl<T> From<Output<T>> for Value {
    fn from(output: Output<T>) -> Value {
        output.value
    }
}

/// Several values awaiting one closure; made by [`Output::all`].
#[derive(Debug, Clone, PartialEq)]
pub struct AllOutputs(Vec<Value>);

impl AllOutputs {
    /// Transforms the values with `f` once they are all known; `f` receives them in order. The
    /// rules of [`Output::apply`] apply.
    pub fn apply<R: Into<Value>>(self, f: impl FnOnce(Vec<Value>) -> R + 'static) -> Output<R> {
        Output::wrap(applies::apply(
            self.0,
            Box::new(move |values| f(values).into()),
        ))
    }
}

/// An input of type `T` of a typed resource: a `T` now, or an [`Output<T>`] of another resource,
/// which the engine resolves (and orders the two resources by). Generated SDKs take
/// `impl Into<Input<T>>`, so both are passed as they are:
/// `.length(8)`, `.content(other.content())`, `.path("index.html")`.
#[derive(Clone, Debug, PartialEq)]
pub enum Input<T> {
    /// A value known now.
    Value(T),
    /// Another resource's output.
    Output(Output<T>),
}

impl<T> From<T> for Input<T> {
    fn from(value: T) -> Input<T> {
        Input::Value(value)
    }
}

impl<T> From<Output<T>> for Input<T> {
    fn from(output: Output<T>) -> Input<T> {
        Input::Output(output)
    }
}

impl From<&str> for Input<String> {
    fn from(text: &str) -> Input<String> {
        Input::Value(text.to_owned())
    }
}

impl<T: Serialize> Serialize for Input<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Input::Value(value) => value.serialize(s),
            Input::Output(output) => output.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::to_value;
    use crate::wire::{OutputField, OutputRef};

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
        let out = Output::new(1).apply(|_| Output::new("inner")).untyped();
        assert_eq!(out.as_value(), &Value::from("inner"));
        let typed: Input<String> = Output::new(2)
            .typed::<i64>()
            .apply(|n| format!("{n}!"))
            .into();
        assert_eq!(to_value(&typed).unwrap(), Value::from("2!"));
    }

    #[test]
    fn typed_outputs_apply_to_their_type() {
        let length: Output<i64> = Output::new(20).typed();
        let doubled = length.apply(|n: i64| n * 2);
        assert_eq!(Value::from(doubled), Value::Integer(40));
        let secret: Output<crate::Secret<String>> = Output::new(Value::secret("pw")).typed();
        let shown = secret.apply(|pw| format!("{}!", pw.expose()));
        assert_eq!(Value::from(shown), Value::secret("pw!"));
    }

    #[test]
    #[should_panic(expected = "resolved to a string")]
    fn a_typed_output_of_another_type_stops_the_program() {
        let wrong: Output<i64> = Output::new("eight").typed();
        let _ = wrong.apply(|n| n + 1);
    }

    #[test]
    fn inputs_serialize_as_values_or_output_references() {
        let reference = Value::Output(OutputRef {
            handle: 3,
            field: OutputField::Property(vec!["result".into()]),
        });
        let from_output: Input<String> = Output::new(reference.clone()).typed().into();
        assert_eq!(to_value(&from_output).unwrap(), reference);
        let from_text: Input<String> = "x".into();
        assert_eq!(to_value(&from_text).unwrap(), Value::from("x"));
        let number: Input<i64> = 8.into();
        assert_eq!(to_value(&number).unwrap(), Value::Integer(8));
    }
}
