//! The `mode` input: Unix permission bits as an octal string.
//!
//! WASI 0.2 (`wasi:filesystem`) has no call that sets or reads permission bits, so the plugin
//! cannot apply a mode: files get the host's default permissions. The mode is validated,
//! normalized and kept as desired state, so that tools reading the state see what was asked for
//! and a change to it is recorded as an update.

/// Validates `mode` and returns it as four octal digits: `644` becomes `0644`.
pub(crate) fn normalize(mode: &str) -> Result<String, String> {
    let digits = mode.trim();
    let valid =
        (3..=4).contains(&digits.len()) && digits.bytes().all(|b| (b'0'..=b'7').contains(&b));
    if valid {
        Ok(format!("{digits:0>4}"))
    } else {
        Err(format!(
            "`{mode}` is not a permission mode: write 3 or 4 octal digits, like \"0644\" or \"755\""
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_to_four_digits() {
        assert_eq!(normalize("644").unwrap(), "0644");
        assert_eq!(normalize("0755").unwrap(), "0755");
        assert_eq!(normalize("1777").unwrap(), "1777");
    }

    #[test]
    fn refuses_what_is_not_octal_permissions() {
        for bad in ["", "64", "0o644", "0888", "rwxr-xr-x", "07777", "-644"] {
            let reason = normalize(bad).unwrap_err();
            assert!(reason.contains("not a permission mode"), "{bad}: {reason}");
        }
    }
}
