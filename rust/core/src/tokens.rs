//! Placeholder replaced by the full token counter.
use tiktoken_rs::CoreBPE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

#[must_use]
pub fn encoding_for_model(model: &str) -> Encoding {
    let m = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    // Fine-tuned models ("ft:gpt-4o-...:org::id") use their base model's encoding.
    let m = m.strip_prefix("ft:").unwrap_or(&m);
    // Prefixes as in tiktoken's model map; gpt-oss uses o200k_harmony, whose
    // ordinary (non-special) tokens are o200k_base's.
    const O200K: [&str; 9] = ["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"];
    if O200K.iter().any(|prefix| m.starts_with(prefix)) {
        Encoding::O200kBase
    } else {
        Encoding::Cl100kBase
    }
}

#[derive(Clone)]
pub struct TokenCounter {
    encoding: Encoding,
    correction: f64,
    bpe: &'static CoreBPE,
}

impl TokenCounter {
    #[must_use]
    pub fn new(model: &str, correction: f64) -> Self {
        let encoding = encoding_for_model(model);
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        Self { encoding, correction, bpe }
    }
    #[must_use]
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
    #[must_use]
    pub fn correction(&self) -> f64 {
        self.correction
    }
    #[must_use]
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }
    #[must_use]
    pub fn count_many(&self, texts: &[&str]) -> Vec<usize> {
        texts.iter().map(|t| self.count(t)).collect()
    }
}
