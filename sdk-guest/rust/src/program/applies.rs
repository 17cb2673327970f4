//! Apply closures: run at once when their inputs are known, otherwise registered with the engine
//! and kept here until the engine resumes them through the exported `resume`.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::bindings::plinth::plugin::monitor;
use crate::Value;
use crate::value::nodes::encode;
use crate::wire::{OutputField, OutputRef};

/// A closure waiting for its inputs, boxed so that closures of any type share the table.
pub(crate) type Closure = Box<dyn FnOnce(Vec<Value>) -> Value>;

struct Pending {
    arity: usize,
    closure: Closure,
}

thread_local! {
    /// The closures registered with the engine, by the handle `register-apply` returned.
    static PENDING: RefCell<BTreeMap<u64, Pending>> = const { RefCell::new(BTreeMap::new()) };
}

/// Applies `closure` to `inputs`: now if they are all known, otherwise once the engine resolves
/// them. Returns the result, or a reference to the result to come.
pub(crate) fn apply(inputs: Vec<Value>, closure: Closure) -> Value {
    if inputs.iter().all(Value::is_known) {
        return run(inputs, closure);
    }
    let arity = inputs.len();
    let encoded: Vec<_> = inputs.into_iter().map(encode).collect();
    let handle = monitor::register_apply(&encoded);
    insert(handle, arity, closure);
    Value::Output(OutputRef {
        handle,
        field: OutputField::Property(Vec::new()),
    })
}

fn insert(handle: u64, arity: usize, closure: Closure) {
    PENDING.with_borrow_mut(|pending| pending.insert(handle, Pending { arity, closure }));
}

/// Runs and forgets the closure registered as `handle`, with its resolved inputs.
pub(crate) fn resume(handle: u64, inputs: Vec<Value>) -> Result<Value, String> {
    // Release the table before running: the closure may register applies of its own.
    let Pending { arity, closure } = PENDING
        .with_borrow_mut(|pending| pending.remove(&handle))
        .ok_or_else(|| format!("no apply with handle {handle} is pending"))?;
    if inputs.len() != arity {
        return Err(format!(
            "apply {handle} takes {arity} inputs, but was resumed with {}",
            inputs.len()
        ));
    }
    Ok(run(inputs, closure))
}

/// Runs a closure on resolved inputs. An unknown input (during a preview) makes the result
/// unknown without running the closure; secret inputs are revealed to the closure and make its
/// result secret.
fn run(inputs: Vec<Value>, closure: Closure) -> Value {
    if inputs.iter().any(Value::contains_unknowns) {
        return Value::Unknown;
    }
    let secret = inputs.iter().any(Value::is_secret);
    let result = closure(inputs.into_iter().map(Value::into_revealed).collect());
    if secret && !result.is_secret() {
        Value::secret(result)
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat() -> Closure {
        Box::new(|values| {
            Value::from(
                values
                    .iter()
                    .map(|v| v.as_str().unwrap_or("?"))
                    .collect::<String>(),
            )
        })
    }

    #[test]
    fn known_inputs_run_at_once() {
        assert_eq!(
            apply(vec!["a".into(), "b".into()], concat()),
            Value::from("ab")
        );
    }

    #[test]
    fn secrets_are_revealed_to_the_closure_and_keep_the_result_secret() {
        let result = apply(vec![Value::secret("pw"), "!".into()], concat());
        assert_eq!(result, Value::secret("pw!"));
    }

    #[test]
    fn resume_runs_the_closure_once() {
        insert(41, 2, concat());
        assert_eq!(resume(41, vec!["x".into(), "y".into()]), Ok("xy".into()));
        assert!(resume(41, vec!["x".into(), "y".into()]).is_err());
    }

    #[test]
    fn resume_with_unknowns_is_unknown() {
        insert(42, 1, Box::new(|_| panic!("must not run")));
        assert_eq!(resume(42, vec![Value::Unknown]), Ok(Value::Unknown));
    }

    #[test]
    fn resume_checks_the_number_of_inputs() {
        insert(43, 2, concat());
        let err = resume(43, vec!["x".into()]).unwrap_err();
        assert!(err.contains("takes 2 inputs"));
    }
}
