//! The words that tell what a sentence is. Matched on lowercased words; phrases are
//! runs of words. English first, then the cue words of the other languages the
//! search stems most (German, French, Spanish, Italian, Portuguese, Dutch).

/// Words that make a sentence a rule wherever they stand: obligations,
/// prohibitions and their absolutes.
pub(super) const RULE_WORDS: &[&str] = &[
    // English
    "must",
    "mustn't",
    "never",
    "always",
    "only",
    "avoid",
    "don't",
    "dont",
    "don\u{2019}t",
    "cannot",
    "can't",
    "shouldn't",
    "should",
    "shall",
    "required",
    "requires",
    "require",
    "mandatory",
    "forbidden",
    "prohibited",
    "refrain",
    "ensure",
    "needs",
    "banned",
    "disallowed",
    "strictly",
    "nobody",
    // German
    "nie",
    "niemals",
    "immer",
    "muss",
    "müssen",
    "nur",
    "verboten",
    // French
    "jamais",
    "toujours",
    "doit",
    "doivent",
    "interdit",
    "seulement",
    "uniquement",
    // Spanish, Portuguese, Italian
    "nunca",
    "siempre",
    "debe",
    "deben",
    "prohibido",
    "solo",
    "sólo",
    "sempre",
    "deve",
    "proibido",
    "mai",
    "vietato",
    "soltanto",
    // Danish, Norwegian, Swedish, Finnish
    "aldrig",
    "altid",
    "skal",
    "aldri",
    "alltid",
    "må",
    "måste",
    "koskaan",
    "aina",
    "täytyy",
    "kielletty",
    // Russian, Greek, Turkish, Hungarian, Romanian, Arabic
    "никогда",
    "всегда",
    "нельзя",
    "должен",
    "должны",
    "запрещено",
    "только",
    "ποτέ",
    "πάντα",
    "πρέπει",
    "απαγορεύεται",
    "asla",
    "daima",
    "yasak",
    "sadece",
    "soha",
    "mindig",
    "tilos",
    "csak",
    "kell",
    "niciodată",
    "întotdeauna",
    "mereu",
    "trebuie",
    "interzis",
    "doar",
    "أبدا",
    "دائما",
    "يجب",
    "ممنوع",
    "فقط",
    // Dutch
    "nooit",
    "altijd",
    "moet",
    "moeten",
    "verboden",
    "alleen",
    // Tamil
    "ஒருபோதும்",
    "எப்போதும்",
    "வேண்டாம்",
    "கூடாது",
];

/// Runs of words that make a sentence a rule.
pub(super) const RULE_PHRASES: &[&[&str]] = &[
    &["do", "not"],
    &["does", "not"],
    &["is", "not", "allowed"],
    &["are", "not", "allowed"],
    &["not", "allowed"],
    &["not", "permitted"],
    &["under", "no", "circumstances"],
    &["at", "no", "time"],
    &["make", "sure"],
    &["be", "sure"],
    &["remember", "to"],
    &["need", "to"],
    &["have", "to"],
    &["has", "to"],
    &["no", "exceptions"],
    &["at", "all", "times"],
    &["stop", "and"],
    &["off", "limits"],
    &["no", "longer"],
];

/// Verbs that, first in a sentence, make it an instruction ("Stop and escalate to
/// the on-call engineer", "Route refunds through the billing queue").
pub(super) const IMPERATIVE_VERBS: &[&str] = &[
    "add",
    "alert",
    "answer",
    "apply",
    "archive",
    "ask",
    "attach",
    "avoid",
    "back",
    "block",
    "book",
    "bump",
    "call",
    "cancel",
    "cap",
    "cc",
    "change",
    "charge",
    "check",
    "cite",
    "clean",
    "close",
    "commit",
    "confirm",
    "contact",
    "copy",
    "create",
    "cut",
    "defer",
    "delete",
    "deploy",
    "disable",
    "document",
    "double-check",
    "downgrade",
    "drop",
    "email",
    "enable",
    "encrypt",
    "escalate",
    "exclude",
    "export",
    "file",
    "fill",
    "flag",
    "follow",
    "forward",
    "freeze",
    "get",
    "give",
    "go",
    "hand",
    "hold",
    "ignore",
    "include",
    "inform",
    "install",
    "keep",
    "label",
    "leave",
    "let",
    "limit",
    "list",
    "lock",
    "log",
    "mark",
    "mention",
    "merge",
    "message",
    "migrate",
    "move",
    "name",
    "notify",
    "open",
    "page",
    "pause",
    "pay",
    "pin",
    "ping",
    "post",
    "prefer",
    "prefix",
    "print",
    "prioritize",
    "prioritise",
    "publish",
    "push",
    "put",
    "quote",
    "raise",
    "read",
    "record",
    "redact",
    "refer",
    "refund",
    "reject",
    "release",
    "remove",
    "rename",
    "reply",
    "report",
    "request",
    "reserve",
    "respond",
    "restart",
    "restore",
    "retry",
    "return",
    "review",
    "revert",
    "roll",
    "rotate",
    "route",
    "run",
    "save",
    "schedule",
    "send",
    "set",
    "ship",
    "show",
    "sign",
    "skip",
    "sort",
    "spend",
    "split",
    "start",
    "stay",
    "stick",
    "stop",
    "store",
    "submit",
    "summarise",
    "summarize",
    "switch",
    "tag",
    "take",
    "tell",
    "test",
    "text",
    "treat",
    "turn",
    "update",
    "upgrade",
    "upload",
    "use",
    "verify",
    "wait",
    "warn",
    "wrap",
    "write",
];

/// Words that make an instruction standing rather than one-off ("every", "any").
pub(super) const ABSOLUTES: &[&str] = &[
    "every",
    "each",
    "any",
    "all",
    "whenever",
    "anything",
    "anyone",
    "everything",
    "jede",
    "jeden",
    "alle",
    "chaque",
    "tous",
    "toutes",
    "cada",
    "todos",
    "todas",
    "ogni",
    "tutti",
    "elke",
];

/// Words that open an instruction's condition ("If the build fails, ...").
pub(super) const CONDITIONS: &[&str] = &[
    "if", "when", "whenever", "unless", "before", "after", "once", "until", "while", "wenn",
    "falls", "si", "quand", "cuando", "se", "quando", "als",
];

/// Words of limits: with a value, a rule or a fact is a hard constraint.
pub(super) const LIMIT_WORDS: &[&str] = &[
    "cap",
    "capped",
    "limit",
    "limits",
    "limited",
    "max",
    "maximum",
    "min",
    "minimum",
    "exceed",
    "exceeds",
    "exceeding",
    "budget",
    "deadline",
    "due",
    "quota",
    "ceiling",
    "threshold",
    "most",
    "least",
    "within",
    "under",
    "over",
    "below",
    "above",
    "no later",
    "allowance",
    "allotted",
    "cutoff",
    "cut-off",
    "timeout",
    "sla",
    "rate",
    "per",
    "höchstens",
    "mindestens",
    "maximal",
    "limite",
    "plafond",
    "máximo",
    "mínimo",
    "massimo",
    "minimo",
];

/// Runs of words that set a limit ("no more than 40 workers").
pub(super) const LIMIT_PHRASES: &[&[&str]] = &[
    &["no", "more", "than"],
    &["not", "more", "than"],
    &["no", "less", "than"],
    &["no", "fewer", "than"],
    &["not", "less", "than"],
    &["nicht", "mehr", "als"],
    &["pas", "plus", "de"],
    &["no", "más", "de"],
    &["non", "più", "di"],
    &["niet", "meer", "dan"],
];

/// Words that make a sentence a decision.
pub(super) const DECISION_WORDS: &[&str] = &[
    "decided",
    "decide",
    "decision",
    "chose",
    "chosen",
    "choose",
    "opted",
    "settled",
    "agreed",
    "picked",
    "selected",
    "instead",
    "going",
    "switched",
    "switching",
    "settle",
    "beschlossen",
    "entschieden",
    "décidé",
    "decidido",
    "deciso",
    "besloten",
];

/// Runs of words that make a sentence a decision.
pub(super) const DECISION_PHRASES: &[&[&str]] = &[
    &["go", "with"],
    &["going", "with"],
    &["let's", "use"],
    &["we'll", "use"],
    &["we", "will", "use"],
    &["we", "use"],
    &["we're", "using"],
    &["we", "are", "using"],
    &["i'll", "use"],
    &["switch", "to"],
    &["rather", "than"],
    &["final", "call"],
    &["we", "pin"],
    &["we'll", "go"],
    &["we", "go", "with"],
];

/// Words that say a value is new: its sentence replaces the item it names.
pub(super) const RESTATE_WORDS: &[&str] = &[
    "instead",
    "correction",
    "update",
    "updated",
    "changed",
    "change",
    "replaces",
    "replaced",
    "anymore",
    "revised",
    "moved",
    "switched",
];

/// Runs of words that say a value is new.
pub(super) const RESTATE_PHRASES: &[&[&str]] = &[
    &["is", "now"],
    &["are", "now"],
    &["now", "is"],
    &["no", "longer"],
    &["from", "now", "on"],
    &["heads", "up"],
    &["switch", "to"],
];

/// Words that make a sentence a goal.
pub(super) const GOAL_WORDS: &[&str] = &[
    "goal",
    "goals",
    "objective",
    "objectives",
    "aim",
    "mission",
    "purpose",
    "deliverable",
    "milestone",
    "ziel",
    "objectif",
    "objetivo",
    "obiettivo",
    "doel",
    // Danish, Norwegian, Swedish, Finnish, Russian, Greek, Turkish, Hungarian,
    // Romanian, Arabic, Tamil
    "mål",
    "målet",
    "tavoite",
    "tavoitteena",
    "цель",
    "στόχος",
    "hedef",
    "amaç",
    "cél",
    "obiectiv",
    "obiectivul",
    "scopul",
    "هدف",
    "الهدف",
    "இலக்கு",
];

/// Runs of words that make a sentence a goal.
pub(super) const GOAL_PHRASES: &[&[&str]] = &[
    &["want", "you", "to"],
    &["need", "you", "to"],
    &["like", "you", "to"],
    &["your", "task"],
    &["the", "task", "is"],
    &["we're", "trying", "to"],
    &["we", "are", "trying", "to"],
    &["end", "result"],
    &["by", "the", "end"],
    &["so", "that", "we"],
];

/// Words that make a sentence a preference.
pub(super) const PREFERENCE_WORDS: &[&str] = &[
    "prefer",
    "prefers",
    "preferred",
    "preference",
    "preferably",
    "rather",
    "favourite",
    "favorite",
    "dislike",
    "bevorzuge",
    "lieber",
    "préfère",
    "prefiero",
    "preferisco",
    "prefiro",
    "liever",
    "foretrækker",
    "foretrekker",
    "föredrar",
    "suosin",
    "mieluummin",
    "предпочитаю",
    "προτιμώ",
    "tercih",
    "inkább",
    "أفضل",
    "விரும்புகிறேன்",
];

/// Runs of words that make a sentence a preference.
pub(super) const PREFERENCE_PHRASES: &[&[&str]] = &[
    &["i", "like"],
    &["i", "love"],
    &["i", "hate"],
    &["we", "like"],
    &["i'd", "rather"],
    &["i'd", "like"],
    &["i", "would", "like"],
    &["i", "would", "rather"],
];

/// Words of how answers look: an instruction about them is a preference.
pub(super) const STYLE_WORDS: &[&str] = &[
    "reply",
    "replies",
    "respond",
    "responses",
    "answer",
    "answers",
    "tone",
    "format",
    "formatting",
    "concise",
    "brief",
    "short",
    "shorter",
    "verbose",
    "detailed",
    "bullet",
    "bullets",
    "markdown",
    "spelling",
    "emoji",
    "emojis",
    "formal",
    "informal",
    "casual",
    "language",
    "style",
    "summaries",
    "wording",
    "voice",
];

/// What links a subject to its value ("X is V", "X changed to V").
pub(super) const COPULAS: &[&[&str]] = &[
    &["has", "changed", "to"],
    &["changed", "to"],
    &["moved", "to"],
    &["was", "changed", "to"],
    &["is", "set", "to"],
    &["is", "now"],
    &["are", "now"],
    &["is"],
    &["are"],
    &["was"],
    &["were"],
    &["equals"],
    &["becomes"],
    &["ist"],
    &["sind"],
    &["est"],
    &["sont"],
    &["es"],
    &["son"],
    &["è"],
    &["é"],
    &["is", "nu"],
    &["ist", "jetzt"],
    &["ist", "nun"],
    &["est", "maintenant"],
    &["est", "désormais"],
    &["ahora", "es"],
    &["es", "ahora"],
    &["è", "ora"],
    &["ora", "è"],
    &["é", "agora"],
    &["agora", "é"],
];

/// Runs of words that open a sentence without saying anything about it.
pub(super) const LEADER_PHRASES: &[&[&str]] = &[&["mise", "à", "jour"], &["nota", "bene"]];

/// Articles and prepositions written elided onto the next word ("l'objectif").
pub(super) const ELISIONS: &[&str] = &[
    "l", "d", "j", "n", "s", "c", "m", "t", "qu", "dell", "all", "dall", "nell", "sull", "un",
];

/// Words common in German and rare elsewhere: a sentence holding two of them
/// capitalises its nouns, which are then no names.
const NOUN_CAPITALISING: &[&str] = &[
    "der", "die", "das", "den", "dem", "des", "und", "nicht", "ist", "sind", "mit", "für", "ein",
    "eine", "einen", "auf", "bei", "von", "zu", "zum", "zur", "im", "wir", "ich", "uns", "bitte",
    "niemals", "immer", "oder", "aber", "wenn", "noch", "auch", "nach", "über", "jetzt", "nie",
    "kein", "keine", "muss", "soll", "wird", "werden", "heute",
];

/// Whether the words are of a language that capitalises every noun.
pub(super) fn capitalises_nouns<'a>(lowers: impl Iterator<Item = &'a str>) -> bool {
    let mut seen: Vec<&str> = Vec::new();
    for word in lowers {
        if NOUN_CAPITALISING.contains(&word) && !seen.contains(&word) {
            seen.push(word);
            if seen.len() >= 2 {
                return true;
            }
        }
    }
    false
}

/// Words that open a sentence without saying anything about it.
pub(super) const LEADERS: &[&str] = &[
    "update",
    "updated",
    "actually",
    "correction",
    "note",
    "fyi",
    "important",
    "reminder",
    "also",
    "and",
    "so",
    "now",
    "ok",
    "okay",
    "please",
    "btw",
    "just",
    "again",
    "ps",
    "heads-up",
    "heads",
    "up",
    "oh",
    "new",
    "change",
    "changed",
    "edit",
    "plus",
    "but",
    "then",
    "aktualisierung",
    "korrektur",
    "hinweis",
    "achtung",
    "actualización",
    "corrección",
    "nota",
    "aggiornamento",
    "correzione",
    "atualização",
    "correção",
    "correctie",
    "wijziging",
    "rappel",
];

/// Words a subject is made without: they do not tell two subjects apart.
pub(super) const SUBJECT_STOPWORDS: &[&str] = &[
    "the",
    "a",
    "an",
    "our",
    "my",
    "your",
    "their",
    "its",
    "this",
    "that",
    "these",
    "those",
    "new",
    "current",
    "currently",
    "updated",
    "latest",
    "old",
    "previous",
    "now",
    "still",
    "actually",
    "please",
    "just",
    "really",
    "again",
    "also",
    "instead",
    "anymore",
    "from",
    "on",
    "total",
    "of",
    "for",
    "to",
    "in",
    "at",
    "by",
    "be",
    "is",
    "are",
    "was",
    "were",
    "will",
    "with",
    "and",
    "or",
    "it",
    "we",
    "you",
    "i",
    "der",
    "die",
    "das",
    "le",
    "la",
    "les",
    "el",
    "los",
    "las",
    "il",
    "lo",
    "o",
    "de",
    "het",
    "een",
    "du",
    "des",
    "del",
    "della",
    "dei",
    "den",
    "dem",
    "ein",
    "eine",
    "un",
    "une",
    "una",
    "jetzt",
    "maintenant",
    "ahora",
    "ora",
    "agora",
];

/// Pronouns that point back to the sentence before ("Never exceed it.").
pub(super) const ANAPHORS: &[&str] = &["it", "this", "that", "them", "these", "those", "es", "le"];

/// Whether `words` holds `phrase` as a run.
pub(super) fn has_phrase(words: &[String], phrase: &[&str]) -> bool {
    phrase.len() <= words.len()
        && words
            .windows(phrase.len())
            .any(|run| run.iter().zip(phrase).all(|(word, cue)| word == cue))
}

/// Whether `words` open with `phrase`.
pub(super) fn starts_with_phrase(words: &[String], phrase: &[&str]) -> bool {
    phrase.len() <= words.len() && words.iter().zip(phrase).all(|(word, cue)| word == cue)
}

/// One bit per list of cue words, so a sentence's words are looked up once each.
pub(super) mod bit {
    pub const RULE: u16 = 1;
    pub const LIMIT: u16 = 1 << 1;
    pub const STYLE: u16 = 1 << 2;
    pub const PREFERENCE: u16 = 1 << 3;
    pub const DECISION: u16 = 1 << 4;
    pub const GOAL: u16 = 1 << 5;
    pub const CONDITION: u16 = 1 << 6;
    pub const ABSOLUTE: u16 = 1 << 7;
    pub const RESTATE: u16 = 1 << 8;
    pub const IMPERATIVE: u16 = 1 << 9;
}

/// Every cue word with the bits of the lists that hold it.
fn table() -> &'static std::collections::HashMap<&'static str, u16> {
    static TABLE: std::sync::OnceLock<std::collections::HashMap<&'static str, u16>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = std::collections::HashMap::new();
        for (list, flag) in [
            (RULE_WORDS, bit::RULE),
            (LIMIT_WORDS, bit::LIMIT),
            (STYLE_WORDS, bit::STYLE),
            (PREFERENCE_WORDS, bit::PREFERENCE),
            (DECISION_WORDS, bit::DECISION),
            (GOAL_WORDS, bit::GOAL),
            (CONDITIONS, bit::CONDITION),
            (ABSOLUTES, bit::ABSOLUTE),
            (RESTATE_WORDS, bit::RESTATE),
            (IMPERATIVE_VERBS, bit::IMPERATIVE),
        ] {
            for word in list {
                *table.entry(*word).or_insert(0) |= flag;
            }
        }
        table
    })
}

/// The bits of the lists holding `word`.
pub(super) fn cue_bits(word: &str) -> u16 {
    table().get(word).copied().unwrap_or(0)
}

/// The bits of the lists holding any of `words`.
pub(super) fn cues_of(words: &[String]) -> u16 {
    words.iter().fold(0, |bits, word| bits | cue_bits(word))
}

/// The bit of the copulas among the phrases.
pub(super) const COPULA_BIT: u16 = 1 << 10;

/// Every phrase by its first word, with the bit of its list.
type PhraseTable = std::collections::HashMap<&'static str, Vec<(&'static [&'static str], u16)>>;

fn phrase_table() -> &'static PhraseTable {
    static TABLE: std::sync::OnceLock<PhraseTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = PhraseTable::new();
        for (list, flag) in [
            (RULE_PHRASES, bit::RULE),
            (DECISION_PHRASES, bit::DECISION),
            (GOAL_PHRASES, bit::GOAL),
            (PREFERENCE_PHRASES, bit::PREFERENCE),
            (RESTATE_PHRASES, bit::RESTATE),
            (LIMIT_PHRASES, bit::LIMIT),
            (COPULAS, COPULA_BIT),
        ] {
            for phrase in list {
                table.entry(phrase[0]).or_default().push((*phrase, flag));
            }
        }
        table
    })
}

/// The bits of the lists whose phrases `words` hold: one lookup per word.
pub(super) fn phrases_of(words: &[String]) -> u16 {
    let table = phrase_table();
    let mut bits = 0;
    for at in 0..words.len() {
        if let Some(phrases) = table.get(words[at].as_str()) {
            for (phrase, flag) in phrases {
                if starts_with_phrase(&words[at..], phrase) {
                    bits |= flag;
                }
            }
        }
    }
    bits
}
