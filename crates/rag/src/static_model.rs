//! Static embeddings: one vector per vocabulary token, pooled by a (weighted) mean and scaled
//! to unit length, the way Model2Vec and WordLlama models compute a text's vector. No network
//! runs, so a chunk costs one tokenization and a few hundred additions: far more chunks a second
//! on one core than a transformer manages.
//!
//! A model directory holds `tokenizer.json` (Hugging Face tokenizers) and `model.safetensors`
//! with the token table (`embeddings`, `embedding.weight`, or its one 2-D tensor; f32, f16, bf16
//! or int8), optionally per-token `weights` and, for a quantised vocabulary, a `mapping` from
//! token id to table row. Special tokens (padding, unknown, sentence marks) are left out of the
//! mean, as the reference implementations do.

use std::collections::HashSet;
use std::path::Path;

use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use tokenizers::{Tokenizer, TruncationParams};

use super::error::RagError;

/// The model file of a static model directory.
pub const MODEL_FILE: &str = "model.safetensors";
/// Names the token table goes by: Model2Vec's, then WordLlama's.
const TABLE_NAMES: [&str; 2] = ["embeddings", "embedding.weight"];

/// A loaded static embedding model.
pub struct StaticModel {
    tokenizer: Tokenizer,
    /// One row of `dim` values per table row.
    table: Vec<f32>,
    dim: usize,
    /// Token id → table row, for a quantised vocabulary; identity when absent.
    mapping: Option<Vec<u32>>,
    /// Token id → weight of its vector in the mean; 1 when absent.
    weights: Option<Vec<f32>>,
    /// Special tokens, never pooled.
    special: HashSet<u32>,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("rows", &(self.table.len() / self.dim.max(1)))
            .field("dim", &self.dim)
            .field("quantised", &self.mapping.is_some())
            .finish()
    }
}

impl StaticModel {
    /// Loads `tokenizer.json` and [`MODEL_FILE`] from `dir`, seeing at most `max_tokens` tokens
    /// of a text. Errors name the file and what is wrong with it.
    pub fn from_dir(dir: &Path, max_tokens: usize) -> Result<StaticModel, RagError> {
        let model_path = dir.join(MODEL_FILE);
        let bad = |what: String| RagError::Embed(format!("{}: {what}", model_path.display()));
        let bytes = std::fs::read(&model_path).map_err(|e| bad(e.to_string()))?;
        let tensors = SafeTensors::deserialize(&bytes).map_err(|e| bad(e.to_string()))?;

        let table_view = TABLE_NAMES
            .iter()
            .find_map(|n| tensors.tensor(n).ok())
            .or_else(|| {
                let mut two_d = tensors
                    .tensors()
                    .into_iter()
                    .filter(|(_, t)| t.shape().len() == 2);
                match (two_d.next(), two_d.next()) {
                    (Some((_, t)), None) => Some(t),
                    _ => None,
                }
            })
            .ok_or_else(|| {
                let mut names = tensors.names();
                names.sort_unstable();
                bad(format!(
                    "no token table: expected a tensor named {} or a single 2-D tensor, found {names:?}",
                    TABLE_NAMES.join(" or ")
                ))
            })?;
        let [rows, dim] = table_view.shape() else {
            return Err(bad(format!(
                "the token table has shape {:?}, expected [tokens, dimension]",
                table_view.shape()
            )));
        };
        let (rows, dim) = (*rows, *dim);
        if rows == 0 || dim == 0 {
            return Err(bad("the token table is empty".into()));
        }
        let table = floats(&table_view).map_err(|e| bad(format!("token table: {e}")))?;

        let weights = match tensors.tensor("weights") {
            Ok(t) => Some(floats(&t).map_err(|e| bad(format!("weights: {e}")))?),
            Err(_) => None,
        };
        let mapping = match tensors.tensor("mapping") {
            Ok(t) => {
                let rows_of = integers(&t).map_err(|e| bad(format!("mapping: {e}")))?;
                if let Some(r) = rows_of.iter().find(|&&r| r < 0 || r as usize >= rows) {
                    return Err(bad(format!(
                        "mapping names row {r}, outside the table's {rows} rows"
                    )));
                }
                Some(rows_of.into_iter().map(|r| r as u32).collect::<Vec<_>>())
            }
            Err(_) => None,
        };
        let vocab = mapping.as_ref().map_or(rows, Vec::len);
        if let Some(w) = &weights
            && w.len() != vocab
        {
            return Err(bad(format!(
                "weights has {} entries for a vocabulary of {vocab}",
                w.len()
            )));
        }

        let tokenizer_path = dir.join("tokenizer.json");
        let bad_tokenizer =
            |what: String| RagError::Embed(format!("{}: {what}", tokenizer_path.display()));
        // Parsed through `FromStr`, whose deserializer the tokenizers crate compiles once: the
        // generic `from_file` would compile all of it again into this crate.
        let mut tokenizer = std::fs::read_to_string(&tokenizer_path)
            .map_err(|e| bad_tokenizer(e.to_string()))?
            .parse::<Tokenizer>()
            .map_err(|e| bad_tokenizer(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens.max(1),
                ..TruncationParams::default()
            }))
            .map_err(|e| bad_tokenizer(e.to_string()))?;
        tokenizer.with_padding(None);
        let special = tokenizer
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, _)| id)
            .collect();
        Ok(StaticModel {
            tokenizer,
            table,
            dim,
            mapping,
            weights,
            special,
        })
    }

    /// The vectors' dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The unit-length vector of `text` (all zeros when no token of it is in the vocabulary).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, RagError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| RagError::Embed(format!("tokenizer: {e}")))?;
        let mut sum = vec![0f32; self.dim];
        let mut total = 0f32;
        for &id in encoding.get_ids() {
            if self.special.contains(&id) {
                continue;
            }
            let row = match &self.mapping {
                Some(m) => match m.get(id as usize) {
                    Some(&r) => r as usize,
                    None => continue,
                },
                None => id as usize,
            };
            let Some(v) = self.table.get(row * self.dim..(row + 1) * self.dim) else {
                continue;
            };
            let w = self
                .weights
                .as_ref()
                .map_or(1.0, |w| w.get(id as usize).copied().unwrap_or(0.0));
            sum.iter_mut().zip(v).for_each(|(s, x)| *s += w * x);
            total += w;
        }
        if total > 0.0 {
            sum.iter_mut().for_each(|s| *s /= total);
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(sum)
    }
}

/// A tensor's values as f32.
fn floats(t: &TensorView<'_>) -> Result<Vec<f32>, String> {
    let data = t.data();
    Ok(match t.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or_default()) as f32)
            .collect(),
        Dtype::I8 => data.iter().map(|&b| f32::from(b as i8)).collect(),
        other => return Err(format!("values of type {other:?} are not supported")),
    })
}

/// A tensor's values as integers.
fn integers(t: &TensorView<'_>) -> Result<Vec<i64>, String> {
    let data = t.data();
    Ok(match t.dtype() {
        Dtype::I64 => data
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or_default()))
            .collect(),
        Dtype::I32 => data
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        Dtype::U32 => data
            .chunks_exact(4)
            .map(|b| i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        other => return Err(format!("indices of type {other:?} are not supported")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word-level tokenizer over `words` (ids from 1; 0 is the special `[UNK]`).
    fn tokenizer_json(words: &[&str]) -> String {
        let vocab: serde_json::Map<String, serde_json::Value> = std::iter::once(("[UNK]", 0))
            .chain(words.iter().enumerate().map(|(i, w)| (*w, i + 1)))
            .map(|(w, i)| (w.to_string(), serde_json::json!(i)))
            .collect();
        serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                              "rstrip": false, "normalized": false, "special": true}],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        })
        .to_string()
    }

    fn write_model(dir: &Path, tensors: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)>, words: &[&str]) {
        let views: Vec<(String, TensorView<'_>)> = tensors
            .iter()
            .map(|(n, d, s, b)| (n.to_string(), TensorView::new(*d, s.clone(), b).unwrap()))
            .collect();
        let bytes = safetensors::serialize(views, None).unwrap();
        std::fs::write(dir.join(MODEL_FILE), bytes).unwrap();
        std::fs::write(dir.join("tokenizer.json"), tokenizer_json(words)).unwrap();
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4)
    }

    #[test]
    fn a_text_is_the_unit_mean_of_its_tokens_without_special_ones() {
        let dir = tempfile::tempdir().unwrap();
        // Rows: [UNK], alpha, beta, gamma.
        let table = [9.0, 9.0, 1.0, 0.0, 0.0, 1.0, 3.0, 4.0];
        write_model(
            dir.path(),
            vec![("embeddings", Dtype::F32, vec![4, 2], f32_bytes(&table))],
            &["alpha", "beta", "gamma"],
        );
        let model = StaticModel::from_dir(dir.path(), 512).unwrap();
        assert_eq!(model.dim(), 2);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!(close(&model.embed("alpha beta").unwrap(), &[h, h]));
        // An unknown word maps to [UNK], which is special: left out, not averaged in.
        assert!(close(&model.embed("alpha unknown beta").unwrap(), &[h, h]));
        assert!(close(&model.embed("gamma").unwrap(), &[0.6, 0.8]));
        assert!(close(&model.embed("nothing known").unwrap(), &[0.0, 0.0]));
        assert!(close(&model.embed("").unwrap(), &[0.0, 0.0]));
    }

    #[test]
    fn quantised_vocabularies_use_the_mapping_and_the_weights() {
        let dir = tempfile::tempdir().unwrap();
        // Two int8 rows shared by three words; beta weighs three times alpha.
        let rows: Vec<u8> = [1i8, 0, 0, 1].iter().map(|&x| x as u8).collect();
        let mapping: Vec<u8> = [0i64, 0, 1, 0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let weights = f32_bytes(&[1.0, 1.0, 3.0, 2.0]);
        write_model(
            dir.path(),
            vec![
                ("embeddings", Dtype::I8, vec![2, 2], rows),
                ("mapping", Dtype::I64, vec![4], mapping),
                ("weights", Dtype::F32, vec![4], weights),
            ],
            &["alpha", "beta", "gamma"],
        );
        let model = StaticModel::from_dir(dir.path(), 512).unwrap();
        let v = model.embed("alpha beta").unwrap();
        let n = (1.0f32 + 9.0).sqrt();
        assert!(close(&v, &[1.0 / n, 3.0 / n]), "{v:?}");
        // gamma shares alpha's row.
        assert!(close(&model.embed("gamma").unwrap(), &[1.0, 0.0]));
    }

    #[test]
    fn half_precision_tables_under_their_other_name_load() {
        let dir = tempfile::tempdir().unwrap();
        let table: Vec<u8> = [0.0f32, 0.0, 0.5, 0.5, -2.0, 0.0]
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect();
        write_model(
            dir.path(),
            vec![("embedding.weight", Dtype::F16, vec![3, 2], table)],
            &["up", "left"],
        );
        let model = StaticModel::from_dir(dir.path(), 512).unwrap();
        assert!(close(&model.embed("left").unwrap(), &[-1.0, 0.0]));
    }

    #[test]
    fn the_token_window_bounds_what_is_pooled() {
        let dir = tempfile::tempdir().unwrap();
        let table = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0];
        write_model(
            dir.path(),
            vec![("embeddings", Dtype::F32, vec![3, 2], f32_bytes(&table))],
            &["x", "y"],
        );
        let model = StaticModel::from_dir(dir.path(), 2).unwrap();
        assert!(close(&model.embed("x x y y y y").unwrap(), &[1.0, 0.0]));
    }

    #[test]
    fn broken_models_are_errors_naming_the_file_and_the_fault() {
        let dir = tempfile::tempdir().unwrap();
        let err = |dir: &Path| StaticModel::from_dir(dir, 512).unwrap_err().to_string();

        std::fs::write(dir.path().join(MODEL_FILE), b"not safetensors").unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), tokenizer_json(&["a"])).unwrap();
        let e = err(dir.path());
        assert!(e.contains(MODEL_FILE), "{e}");

        let two = f32_bytes(&[0.0; 4]);
        write_model(
            dir.path(),
            vec![
                ("first", Dtype::F32, vec![2, 2], two.clone()),
                ("second", Dtype::F32, vec![2, 2], two.clone()),
            ],
            &["a"],
        );
        let e = err(dir.path());
        assert!(
            e.contains("no token table") && e.contains("\"first\""),
            "{e}"
        );

        write_model(
            dir.path(),
            vec![
                ("embeddings", Dtype::F32, vec![2, 2], two.clone()),
                ("mapping", Dtype::I64, vec![1], 7i64.to_le_bytes().to_vec()),
            ],
            &["a"],
        );
        let e = err(dir.path());
        assert!(e.contains("mapping names row 7"), "{e}");

        write_model(
            dir.path(),
            vec![
                ("embeddings", Dtype::F32, vec![2, 2], two.clone()),
                ("weights", Dtype::F32, vec![3], f32_bytes(&[1.0; 3])),
            ],
            &["a"],
        );
        let e = err(dir.path());
        assert!(
            e.contains("weights has 3 entries for a vocabulary of 2"),
            "{e}"
        );

        write_model(
            dir.path(),
            vec![("embeddings", Dtype::F32, vec![2, 2], two)],
            &["a"],
        );
        std::fs::write(dir.path().join("tokenizer.json"), "{").unwrap();
        let e = err(dir.path());
        assert!(e.contains("tokenizer.json"), "{e}");
    }
}
