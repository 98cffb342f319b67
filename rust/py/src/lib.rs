//! `lossless._native`: a thin adapter from Python to `lossless-core`. Each
//! function extracts its arguments, runs the core with the interpreter released,
//! and converts the result to builtins.

#![expect(
    clippy::needless_pass_by_value,
    reason = "PyO3 extracts arguments as owned values, and map_err hands over errors by value"
)]

mod arena;
mod arena_rows;
mod compaction;
mod convert;
mod encryption;
mod errors;
mod files;
mod formats;
mod maps;
mod postgres;
mod prefix;
mod recall;
mod render_cache;
mod results;
mod round;
mod span;
mod store;
mod sync;
mod tokens;
mod turn_memo;

use pyo3::prelude::*;

/// Runs `work` without holding the interpreter and maps a core error to Python. A
/// panic in `work` becomes a `StoreError` ("internal error: ..."), not PyO3's
/// `PanicException`, which derives from `BaseException` and so escapes every
/// `except Exception` of the caller.
pub(crate) fn release<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    F: FnOnce() -> lossless_core::Result<T> + Send,
    T: Send,
{
    py.detach(|| lossless_core::error::catch_panic(work))
        .map_err(errors::to_py_err)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("MARKER_TOKENS", lossless_core::request::MARKER_TOKENS)?;
    module.add("PART_KINDS", lossless_core::parts::KIND_NAMES.to_vec())?;
    module.add_class::<store::Store>()?;
    module.add_class::<store::ViewStats>()?;
    module.add_class::<store::SessionInfo>()?;
    module.add_class::<store::SessionRow>()?;
    module.add_class::<store::StreamRow>()?;
    module.add_class::<store::AppendResult>()?;
    module.add_class::<store::TurnAppendResult>()?;
    module.add_class::<store::MessageRecord>()?;
    module.add_class::<store::EventRow>()?;
    module.add_class::<store::StoreStats>()?;
    module.add_class::<store::ForkRow>()?;
    module.add_class::<store::ErasureReceipt>()?;
    module.add_class::<store::RetentionRuleRow>()?;
    module.add_class::<store::LedgerItemRow>()?;
    module.add_class::<store::LedgerUpdateResult>()?;
    module.add_function(wrap_pyfunction!(store::ledger_subject, module)?)?;
    module.add_function(wrap_pyfunction!(sync::sync_chain, module)?)?;
    module.add_class::<files::FileScan>()?;
    module.add_class::<files::FileRecord>()?;
    module.add_class::<maps::MapRun>()?;
    module.add_class::<maps::MapOutcome>()?;
    module.add_class::<store::GrepRow>()?;
    module.add_class::<store::DagRow>()?;
    module.add_class::<recall::ExpansionRow>()?;
    module.add_class::<recall::ExpandedRow>()?;
    module.add_class::<recall::MessagePageRow>()?;
    module.add_class::<compaction::PruneResult>()?;
    module.add_class::<compaction::TextResult>()?;
    module.add_class::<compaction::SpanTextResult>()?;
    module.add_class::<compaction::SummaryRow>()?;
    module.add_class::<compaction::CommitResult>()?;
    module.add_class::<compaction::ExtractiveCommitResult>()?;
    module.add_class::<compaction::RoundCommit>()?;
    module.add_class::<compaction::RoundResult>()?;
    module.add_class::<arena::ArenaRules>()?;
    module.add_class::<arena::LexicalIndex>()?;
    module.add_class::<arena_rows::ArenaWriteRow>()?;
    module.add_class::<arena_rows::ArenaEntryRow>()?;
    module.add_class::<arena_rows::ArenaPlanRow>()?;
    module.add_class::<arena_rows::ZoneReports>()?;
    module.add_class::<arena_rows::ZoneReportRow>()?;
    module.add_class::<arena_rows::ArenaObservedRow>()?;
    module.add_class::<arena_rows::RecallHitRow>()?;
    module.add_class::<arena_rows::ViewItemRow>()?;
    module.add_function(wrap_pyfunction!(arena::normalize_usage, module)?)?;
    module.add_function(wrap_pyfunction!(postgres::prepare_postgres, module)?)?;
    module.add_function(wrap_pyfunction!(postgres::enable_postgres_tenants, module)?)?;
    module.add_function(wrap_pyfunction!(encryption::encrypt_database, module)?)?;
    module.add_class::<span::Span>()?;
    module.add_class::<prefix::ItemUnits>()?;
    module.add_function(wrap_pyfunction!(formats::format_request, module)?)?;
    module.add_class::<prefix::RequestPrint>()?;
    module.add_class::<round::RoundRules>()?;
    module.add(
        "MIN_SUMMARY_TOKENS",
        lossless_core::plan::MIN_SUMMARY_TOKENS,
    )?;
    module.add(
        "SUMMARY_FRAMING_TOKENS",
        lossless_core::plan::SUMMARY_FRAMING_TOKENS,
    )?;
    module.add(
        "WELL_SHRUNK_DIVISOR",
        lossless_core::plan::WELL_SHRUNK_DIVISOR,
    )?;
    module.add_class::<tokens::TokenCounter>()?;
    module.add_function(wrap_pyfunction!(tokens::count_tokens, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::encoding_for_model, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::model_provider, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::image_tokens, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::media_facts, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::check_reasoning_payload, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::check_compaction_payload, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::extract_file_ids, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::merge_file_id_footer, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::check_summary, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::with_kept, module)?)?;
    for function in [
        wrap_pyfunction!(files::scan_file, module)?,
        wrap_pyfunction!(files::store_file, module)?,
        wrap_pyfunction!(files::file_record, module)?,
        wrap_pyfunction!(files::read_file, module)?,
        wrap_pyfunction!(files::export_file, module)?,
        wrap_pyfunction!(maps::create_map, module)?,
        wrap_pyfunction!(maps::map_run, module)?,
        wrap_pyfunction!(maps::map_inputs, module)?,
        wrap_pyfunction!(maps::map_outcomes, module)?,
        wrap_pyfunction!(maps::record_map_outcome, module)?,
        wrap_pyfunction!(maps::create_child_session, module)?,
        wrap_pyfunction!(maps::item_session, module)?,
        wrap_pyfunction!(maps::child_sessions, module)?,
    ] {
        module.add_function(function)?;
    }
    Ok(())
}
