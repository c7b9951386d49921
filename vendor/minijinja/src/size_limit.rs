//! Per-thread limits on the size of values a template builds.
//!
//! Without a limit set (the default) the engine behaves as upstream.  With
//! one set, string repetition (`*`), string concatenation (`~`, `+`),
//! sequence repetition and concatenation, captured blocks (`{% set x %}`,
//! macro bodies, filter blocks) and the stringification of arguments fail
//! with [`ErrorKind::InvalidOperation`] before building a value larger than
//! [`ValueSizeLimit::max_value`].  Every string and sequence value created
//! while the limit is set is counted; once they exceed
//! [`ValueSizeLimit::max_total`] the next instruction fails.  A sequence
//! counts as its number of items times the size of a [`Value`].  The text
//! [`Template::render`](crate::Template::render) produces counts as one value.
use std::cell::Cell;
use std::fmt::{self, Write};

use crate::error::{Error, ErrorKind};
use crate::value::Value;

/// Size limits for the values built on this thread, see [`set_value_size_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueSizeLimit {
    /// Largest string (bytes) or sequence (items × size of a value) one operation may build.
    pub max_value: usize,
    /// Most bytes of string and sequence values created while the limit is set.
    pub max_total: usize,
}

#[derive(Debug, Clone, Copy)]
struct State {
    limit: ValueSizeLimit,
    used: usize,
    exceeded: bool,
}

thread_local! {
    static STATE: Cell<Option<State>> = const { Cell::new(None) };
}

/// Restores the previous limit of the thread when dropped.
#[derive(Debug)]
pub struct ValueSizeLimitGuard {
    previous: Option<State>,
}

impl ValueSizeLimitGuard {
    /// Whether a value was refused, or the total exceeded, since the limit was set.
    pub fn exceeded(&self) -> bool {
        STATE.with(|s| s.get().is_some_and(|s| s.exceeded))
    }

    /// Whether the values created since the limit was set exceed its total.
    pub fn total_exceeded(&self) -> bool {
        STATE.with(|s| s.get().is_some_and(|s| s.used > s.limit.max_total))
    }
}

impl Drop for ValueSizeLimitGuard {
    fn drop(&mut self) {
        STATE.with(|s| s.set(self.previous));
    }
}

/// Sets the value size limit of the current thread until the guard is dropped.
pub fn set_value_size_limit(limit: ValueSizeLimit) -> ValueSizeLimitGuard {
    let previous = STATE.with(|s| {
        s.replace(Some(State {
            limit,
            used: 0,
            exceeded: false,
        }))
    });
    ValueSizeLimitGuard { previous }
}

/// The limit set on the current thread, if any.
pub fn value_size_limit() -> Option<ValueSizeLimit> {
    STATE.with(|s| s.get().map(|s| s.limit))
}

/// Checks that a value of `size` bytes may be built (it is counted when created).
pub fn check_value_size(size: usize) -> Result<(), Error> {
    check_growth(0, size)
}

/// Checks that a value of `current` bytes may grow by `added` bytes.
fn check_growth(current: usize, added: usize) -> Result<(), Error> {
    STATE
        .with(|s| {
            let Some(mut state) = s.get() else {
                return Ok(());
            };
            let size = current.saturating_add(added);
            if size > state.limit.max_value {
                state.exceeded = true;
                s.set(Some(state));
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "value of {size} bytes exceeds the size limit of {} bytes",
                        state.limit.max_value
                    ),
                ));
            }
            Ok(())
        })
        .and_then(|_| check_total())
}

/// Counts a value of `size` bytes that was created.
pub(crate) fn note_built(size: usize) {
    STATE.with(|s| {
        if let Some(mut state) = s.get() {
            state.used = state.used.saturating_add(size);
            state.exceeded |= state.used > state.limit.max_total;
            s.set(Some(state));
        }
    });
}

/// Fails once the values created exceed the total limit.
pub(crate) fn check_total() -> Result<(), Error> {
    match STATE.with(|s| s.get()) {
        Some(state) if state.used > state.limit.max_total => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "values built exceed the total size limit of {} bytes",
                state.limit.max_total
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks a sequence of `items` values.
pub(crate) fn check_seq_len(items: usize) -> Result<(), Error> {
    check_value_size(seq_size(items))
}

/// The counted size of a sequence of `items` values.
pub(crate) fn seq_size(items: usize) -> usize {
    items.saturating_mul(std::mem::size_of::<Value>())
}

/// A string that refuses writes past the value size limit.
#[derive(Default)]
pub(crate) struct LimitedString {
    pub(crate) buf: String,
    pub(crate) err: Option<Error>,
}

impl Write for LimitedString {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Err(err) = check_growth(self.buf.len(), s.len()) {
            self.err = Some(err);
            return Err(fmt::Error);
        }
        self.buf.push_str(s);
        Ok(())
    }
}

/// Formats a value into a string within the value size limit.
pub fn to_string_limited(value: &Value) -> Result<String, Error> {
    let mut out = LimitedString::default();
    match write!(out, "{value}") {
        Ok(()) => Ok(out.buf),
        Err(_) => Err(out
            .err
            .unwrap_or_else(|| Error::from(ErrorKind::WriteFailure))),
    }
}
