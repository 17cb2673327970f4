//! The program `plinth import` runs instead of the project's: it registers the imported
//! resources, with the `import` option and the inputs read back, after the recorded resources
//! they hang from.

use std::sync::Arc;

use async_trait::async_trait;
use plinth_engine::program::{Monitor, Program, ProgramError, RegisterRequest, ResourceOptions};
use plinth_engine::value::{PropertyMap, Value};

/// One registration; `parent` and `provider` index earlier ones.
#[derive(Debug, Clone)]
pub struct Node {
    pub ty: String,
    pub name: String,
    pub custom: bool,
    pub inputs: PropertyMap,
    pub parent: Option<usize>,
    pub provider: Option<usize>,
    /// The provider id to adopt; `None` for a recorded resource the run leaves as it is.
    pub import_id: Option<String>,
}

pub struct ImportProgram {
    nodes: Arc<Vec<Node>>,
}

impl ImportProgram {
    pub fn new(nodes: Arc<Vec<Node>>) -> ImportProgram {
        ImportProgram { nodes }
    }
}

#[async_trait]
impl Program for ImportProgram {
    async fn run(&mut self, monitor: &Monitor) -> Result<(), ProgramError> {
        let mut handles: Vec<u64> = Vec::with_capacity(self.nodes.len());
        for node in self.nodes.iter() {
            let options = ResourceOptions {
                parent: node.parent.map(|i| handles[i]),
                provider: node.provider.map(|i| handles[i]),
                import_id: node.import_id.clone(),
                ..ResourceOptions::default()
            };
            let handle = monitor
                .register_resource(RegisterRequest {
                    ty: node.ty.clone(),
                    name: node.name.clone(),
                    custom: node.custom,
                    inputs: node.inputs.clone(),
                    options,
                })
                .map_err(|e| ProgramError(e.to_string()))?;
            handles.push(handle);
        }
        Ok(())
    }

    async fn resume(
        &mut self,
        _: &Monitor,
        apply: u64,
        _: Vec<Value>,
    ) -> Result<Value, ProgramError> {
        Err(ProgramError(format!("no apply {apply} was registered")))
    }
}
