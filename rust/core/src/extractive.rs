//! Placeholder replaced by the full extractive summariser.
pub struct SourceMessage<'a> {
    pub role: &'a str,
    pub seq: i64,
    pub texts: Vec<&'a str>,
    pub tools: Vec<SourceTool<'a>>,
    pub file_refs: Vec<SourceFileRef<'a>>,
}
pub struct SourceTool<'a> {
    pub name: &'a str,
    pub input: &'a str,
    pub status: &'a str,
    pub output: Option<&'a str>,
    pub error: Option<&'a str>,
}
pub struct SourceFileRef<'a> {
    pub file_id: &'a str,
    pub path: &'a str,
}
#[must_use]
pub fn extractive_summary(messages: &[SourceMessage], max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    let first = messages.iter().find(|m| m.role == "user").and_then(|m| m.texts.first()).copied().unwrap_or("");
    let mut s = format!("## Goal\n{}", first.chars().take(300).collect::<String>());
    while count(&s) > max_tokens && !s.is_empty() {
        s.truncate(s.len() / 2);
    }
    s
}
