//! The composer's last step: render the stage outputs through registry templates.
//!
//! The system prompt is the registry prompt `compose_system` (or the one a caller names) and the
//! layout is the registry prompt `compose_frame`, both ordinary templates that a user folder can
//! shadow. The cacheable prefix (system + tools + always-on rules) is the byte run the reference
//! layout ([`render_default_frame`]) defines; it is located in the rendered text, so a shadowing
//! frame that keeps it contiguous keeps prompt caches hitting, and one that does not gets a
//! warning instead of a wrong offset.

use serde_json::{Map, Value};

use super::{ComposeError, ComposeRequest, ComposedPrompt, compose_stages, render_default_frame};
use crate::library::PromptLibrary;
use crate::tokens::count_tokens;

/// Registry name of the default system prompt.
pub const DEFAULT_SYSTEM_PROMPT: &str = "compose_system";
/// Registry name of the frame template.
pub const FRAME_TEMPLATE: &str = "compose_frame";

/// Runs the stages and renders the final prompt through the registry templates.
pub fn compose_prompt(
    library: &PromptLibrary,
    request: &ComposeRequest,
    system: Option<&str>,
) -> Result<ComposedPrompt, ComposeError> {
    let stages = compose_stages(request)?;
    let system_name = system.unwrap_or(DEFAULT_SYSTEM_PROMPT);
    let system_prompt = library
        .render(system_name, &Map::new())
        .map_err(|e| ComposeError::Template(e.to_string()))?;

    let mut args = Map::new();
    args.insert("query".into(), Value::String(request.query.clone()));
    args.insert(
        "system_prompt".into(),
        Value::String(system_prompt.text.clone()),
    );
    args.insert(
        "stages".into(),
        serde_json::to_value(&stages).map_err(|e| ComposeError::Template(e.to_string()))?,
    );
    let frame = library
        .render(FRAME_TEMPLATE, &args)
        .map_err(|e| ComposeError::Template(e.to_string()))?;
    // Trailing whitespace is template layout, not content.
    let text = frame.text.trim_end().to_string();

    let mut composed = render_default_frame(&stages, &request.query, &system_prompt.text);
    composed.warnings.extend(system_prompt.warnings);
    if text != composed.text {
        match text.find(&composed.prefix) {
            Some(start) => composed.prefix_start = start,
            None => {
                composed.warnings.push(format!(
                    "the `{FRAME_TEMPLATE}` template does not keep system + tools + always-on rules \
                     contiguous: no cacheable prefix is reported"
                ));
                composed.prefix = String::new();
                composed.prefix_start = 0;
                composed.prefix_tokens = 0;
            }
        }
        composed.tokens_per_block.total = count_tokens(&text);
        composed.text = text;
    }
    Ok(composed)
}
