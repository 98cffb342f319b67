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
    if m.starts_with("gpt-4o") || m.starts_with("gpt-5") || m.starts_with("gpt-4.1") || m.starts_with("o1") || m.starts_with("o3") || m.starts_with("o4") {
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
