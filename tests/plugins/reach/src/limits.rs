//! Resource types that use what limits bound: memory and time.

use std::time::{Duration, Instant};

use plinth_sdk::{PropertyMap, ProviderError};

use crate::{number, outputs};

/// Allocates `mib` MiB and touches every page, so that the memory is really used.
pub(crate) fn alloc(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let mib: usize = number(inputs, "mib")?;
    let mut block = vec![0u8; mib << 20];
    for page in block.chunks_mut(64 << 10) {
        page[0] = 1;
    }
    std::hint::black_box(&block);
    Ok(outputs([("mib", (mib as i64).into())]))
}

/// Keeps the CPU busy for `ms` milliseconds.
pub(crate) fn spin(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let ms: u64 = number(inputs, "ms")?;
    let until = Instant::now() + Duration::from_millis(ms);
    let mut turns = 0u64;
    while Instant::now() < until {
        turns = std::hint::black_box(turns.wrapping_add(1));
    }
    Ok(outputs([("ms", (ms as i64).into())]))
}

/// Sleeps `ms` milliseconds: waits in the host, not in WebAssembly.
pub(crate) fn sleep(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let ms: u64 = number(inputs, "ms")?;
    std::thread::sleep(Duration::from_millis(ms));
    Ok(outputs([("ms", (ms as i64).into())]))
}
