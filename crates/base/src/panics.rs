//! Panic payloads as text, for the places that catch a panic and report it (a retrieval index
//! that panicked while opening, a stage call that panicked on a worker thread).

/// The text of a panic's payload: the message of `panic!("…")`, else "unknown panic".
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn reads_static_and_formatted_messages() {
        let payload = std::panic::catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "static");
        let n = 7;
        let payload = std::panic::catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "formatted 7");
        let payload = std::panic::catch_unwind(|| std::panic::panic_any(3_u8)).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "unknown panic");
    }
}
