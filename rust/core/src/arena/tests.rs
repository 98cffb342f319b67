//! Property and unit tests of the arena's planning.

use proptest::prelude::*;

use super::*;

/// One token per whitespace-separated word: enough to test budgets exactly.
fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn entry(seq: i64, zone: Zone, priority: Priority, tokens: usize) -> Entry {
    let text = (0..tokens)
        .map(|n| format!("w{seq}_{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    Entry {
        seq,
        zone,
        key: format!("k{seq}"),
        source: "test".into(),
        priority,
        text,
        tokens: tokens as i64,
        full_tokens: tokens as i64,
        once: false,
        external: false,
    }
}

fn rules(limits: PerZone<ZoneLimits>) -> PlanRules {
    PlanRules {
        limits,
        relax_order: vec![Zone::MemoryRecall, Zone::ToolFailures, Zone::MemoryWorking],
        cascade: true,
        min_cut_tokens: 16,
    }
}

fn arb_limits() -> impl Strategy<Value = PerZone<ZoneLimits>> {
    proptest::array::uniform7((0_i64..300, 0_i64..800))
        .prop_map(|pairs| pairs.map(|(floor, cap)| ZoneLimits { floor, cap }.clean()))
}

fn arb_entries() -> impl Strategy<Value = Vec<Entry>> {
    proptest::collection::vec((0_usize..7, 0_usize..4, 1_usize..300), 0..40).prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(seq, (zone, priority, tokens))| {
                entry(seq as i64, Zone::ALL[zone], Priority::ALL[priority], tokens)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn allocation_keeps_every_bound(
        total in 0_i64..3_000,
        demand in proptest::array::uniform7(0_i64..1_000),
        limits in arb_limits(),
    ) {
        let floors: i64 = Zone::ALL.iter().map(|z| demand[z.index()].min(limits[z.index()].floor)).sum();
        match allocate(total, &demand, &limits) {
            Err(unmet) => {
                prop_assert!(floors > total);
                prop_assert_eq!(unmet.floors, floors);
            }
            Ok(granted) => {
                prop_assert!(floors <= total);
                prop_assert!(granted.iter().sum::<i64>() <= total);
                for zone in Zone::ALL {
                    let z = zone.index();
                    // Floors honoured, never above demand or cap.
                    prop_assert!(granted[z] >= demand[z].min(limits[z].floor));
                    prop_assert!(granted[z] <= demand[z].min(limits[z].cap));
                }
                // Zone order: a zone gets more than its floor only once every earlier
                // zone got all it could (its demand within its cap).
                for zone in Zone::ALL {
                    let z = zone.index();
                    if granted[z] > demand[z].min(limits[z].floor) {
                        for earlier in &Zone::ALL[..z] {
                            let e = earlier.index();
                            prop_assert_eq!(granted[e], demand[e].min(limits[e].cap));
                        }
                    }
                }
                // Nothing left idle while some zone could take more.
                let left = total - granted.iter().sum::<i64>();
                if left > 0 {
                    for zone in Zone::ALL {
                        let z = zone.index();
                        prop_assert_eq!(granted[z], demand[z].min(limits[z].cap));
                    }
                }
            }
        }
    }

    #[test]
    fn a_plan_stays_within_its_caps_and_is_deterministic(
        entries in arb_entries(),
        total in 0_i64..2_500,
        limits in arb_limits(),
    ) {
        let rules = rules(limits);
        let first = plan(&entries, total, &rules, None, &words);
        let again = plan(&entries, total, &rules, None, &words);
        prop_assert_eq!(&first.accepted, &again.accepted);
        prop_assert!(first.tokens <= total);
        prop_assert_eq!(first.tokens, first.accepted.iter().map(|a| a.tokens).sum::<i64>());
        for zone in Zone::ALL {
            let report = &first.zones[zone.index()];
            prop_assert!(report.accepted <= report.allocated, "{:?}", zone);
            prop_assert!(report.allocated <= report.cap.max(report.floor));
        }
        for accepted in &first.accepted {
            let text = accepted.text.as_deref().unwrap_or(&entries[accepted.index].text);
            prop_assert!(words(text) as i64 <= accepted.tokens);
        }
        // Floors are honoured whenever they fit: a met plan gives each zone its floor.
        if first.stage == FloorStage::Met {
            for zone in Zone::ALL {
                let report = &first.zones[zone.index()];
                prop_assert!(report.allocated >= report.demand.min(report.floor));
            }
            // No entry is left out that would fit whole in what the plan left over,
            // within its zone's cap: allocation one zone could not use is not wasted.
            let chosen: Vec<usize> = first.accepted.iter().map(|a| a.index).collect();
            for (at, entry) in entries.iter().enumerate() {
                let report = &first.zones[entry.zone.index()];
                let room = (total - first.tokens).min(report.cap - report.accepted);
                prop_assert!(chosen.contains(&at) || entry.tokens > room, "{:?}", entry.key);
            }
        }
        // The order of the given entries does not matter, only their sequence numbers.
        let mut reversed = entries.clone();
        reversed.reverse();
        let other = plan(&reversed, total, &rules, None, &words);
        let keys = |p: &Plan, es: &[Entry]| p.accepted.iter().map(|a| es[a.index].key.clone()).collect::<Vec<_>>();
        prop_assert_eq!(keys(&first, &entries), keys(&other, &reversed));
    }

    #[test]
    fn controller_shifts_stay_within_what_zones_want_and_can_be_allocated(
        entries in arb_entries(),
        limits in arb_limits(),
        max_cap in 200_i64..3_000,
        turns in 3_usize..30,
    ) {
        let mut state = ControllerState::new(&limits);
        let start = state.caps;
        let planned = run_controller(&mut state, &limits, &entries, max_cap, turns);
        prop_assert_eq!(state.caps.iter().sum::<i64>(), start.iter().sum::<i64>());
        let zones = &planned.zones;
        let floors: Vec<i64> = Zone::ALL
            .iter()
            .map(|z| limits[z.index()].floor.min(zones[z.index()].demand))
            .collect();
        for zone in Zone::ALL {
            let z = zone.index();
            let wanted = zones[z].demand + zones[z].cut_at_write;
            let cap = state.caps[z];
            if cap > start[z] {
                let reachable = max_cap - (floors.iter().sum::<i64>() - floors[z]);
                prop_assert!(cap <= wanted.min(reachable), "{:?}: {:?}", zone, state.caps);
            }
            if cap < start[z] {
                prop_assert!(!zone.is_critical());
                prop_assert!(cap >= limits[z].floor.max(wanted), "{:?}: {:?}", zone, state.caps);
            }
        }
    }

    #[test]
    fn an_over_full_zone_never_ends_the_plan(tokens in 200_usize..2_000) {
        let limits = [ZoneLimits { floor: 0, cap: 500 }; 7];
        let entries = vec![
            entry(1, Zone::Truth, Priority::High, tokens),
            entry(2, Zone::TaskState, Priority::High, 40),
            entry(3, Zone::MemoryWorking, Priority::High, 40),
        ];
        let planned = plan(&entries, 700, &rules(limits), None, &words);
        let zones: Vec<Zone> = planned.accepted.iter().map(|a| entries[a.index].zone).collect();
        prop_assert_eq!(zones, vec![Zone::Truth, Zone::TaskState, Zone::MemoryWorking]);
    }
}

#[test]
fn inside_a_zone_priority_then_the_newest_go_first() {
    let limits = [ZoneLimits { floor: 0, cap: 100 }; 7];
    let entries = vec![
        entry(1, Zone::Truth, Priority::Normal, 10),
        entry(2, Zone::Truth, Priority::Normal, 10),
        entry(3, Zone::Truth, Priority::Critical, 10),
    ];
    let planned = plan(&entries, 1_000, &rules(limits), None, &words);
    let keys: Vec<&str> = planned
        .accepted
        .iter()
        .map(|a| entries[a.index].key.as_str())
        .collect();
    assert_eq!(keys, ["k3", "k2", "k1"]);
    // Rendered oldest first, so a new entry only adds to the end.
    let rendered = render(&entries, &planned);
    let first = rendered.stable.find("w1_0").unwrap();
    let third = rendered.stable.find("w3_0").unwrap();
    assert!(first < third, "{}", rendered.stable);
    assert!(rendered.volatile.is_empty());
}

#[test]
fn an_entry_that_does_not_fit_is_cut_when_enough_is_left_and_skipped_otherwise() {
    let mut limits = [ZoneLimits { floor: 0, cap: 0 }; 7];
    limits[Zone::TaskState.index()].cap = 100;
    limits[Zone::MemoryWorking.index()].cap = 10;
    let entries = vec![
        entry(1, Zone::TaskState, Priority::High, 300),
        entry(2, Zone::MemoryWorking, Priority::High, 300),
    ];
    let planned = plan(&entries, 1_000, &rules(limits), None, &words);
    let task = &planned.zones[Zone::TaskState.index()];
    assert_eq!(task.cut, ["k1"]);
    assert!(task.accepted <= 100 && task.accepted > 50, "{task:?}");
    let working = &planned.zones[Zone::MemoryWorking.index()];
    assert_eq!(
        (working.accepted, working.dropped.as_slice()),
        (0, &["k2".to_string()][..])
    );
}

fn floored(floors: [i64; 7]) -> PerZone<ZoneLimits> {
    floors.map(|floor| ZoneLimits { floor, cap: 400 })
}

fn one_per_zone() -> Vec<Entry> {
    Zone::ALL
        .iter()
        .enumerate()
        .map(|(at, zone)| entry(at as i64, *zone, Priority::Normal, 100))
        .collect()
}

#[test]
fn the_cascade_relaxes_floors_in_order() {
    let rules = rules(floored([0, 100, 100, 100, 100, 100, 100]));
    // 600 of floors in 450: dropping memory_recall's and tool_failures' is enough.
    let planned = plan(&one_per_zone(), 450, &rules, None, &words);
    assert_eq!(planned.stage, FloorStage::Relaxed);
    assert_eq!(planned.relaxed, [Zone::MemoryRecall, Zone::ToolFailures]);
    // In 250, relaxing all three still leaves 300 (rag_external keeps its floor):
    // only the critical zones are planned, with their floors.
    let planned = plan(&one_per_zone(), 250, &rules, None, &words);
    assert_eq!(planned.stage, FloorStage::CriticalOnly);
    let zones: Vec<Zone> = planned
        .accepted
        .iter()
        .map(|a| one_per_zone()[a.index].zone)
        .collect();
    assert!(zones.iter().all(|zone| zone.is_critical()), "{zones:?}");
    assert_eq!(planned.zones[Zone::MemoryWorking.index()].dropped, ["k4"]);
    // Below the critical floors themselves: unrecoverable, critical zones without floors.
    let planned = plan(&one_per_zone(), 150, &rules, None, &words);
    assert_eq!(planned.stage, FloorStage::Unrecoverable);
    assert!(planned.tokens <= 150);
    assert!(planned.tokens > 0);
}

#[test]
fn without_the_cascade_an_unmet_floor_is_unrecoverable_at_once() {
    let mut rules = rules(floored([0, 100, 100, 100, 100, 100, 0]));
    rules.cascade = false;
    let planned = plan(&one_per_zone(), 450, &rules, None, &words);
    assert_eq!(planned.stage, FloorStage::Unrecoverable);
}

fn observe_turns(
    state: &mut ControllerState,
    limits: &PerZone<ZoneLimits>,
    entries: &[Entry],
    turns: usize,
) -> Vec<Shift> {
    let control = ControllerRules {
        max_cap: 2_000,
        ..ControllerRules::default()
    };
    let mut shifts = Vec::new();
    for _ in 0..turns {
        let planned = plan(entries, 2_000, &rules(*limits), Some(&state.caps), &words);
        shifts.extend(state.observe(&control, limits, &planned.zones));
    }
    shifts
}

#[test]
fn the_controller_moves_cap_from_an_idle_zone_to_a_cut_one_after_its_warmup() {
    let limits = [ZoneLimits { floor: 0, cap: 200 }; 7];
    let mut state = ControllerState::new(&limits);
    // Task state wants 600 tokens in a cap of 200; working memory has no demand.
    let entries = vec![entry(1, Zone::TaskState, Priority::High, 600)];
    let early = observe_turns(&mut state, &limits, &entries, 2);
    assert!(early.is_empty(), "no shift during the warm-up");
    let shifts = observe_turns(&mut state, &limits, &entries, 1);
    assert!(!shifts.is_empty());
    assert!(shifts
        .iter()
        .all(|s| s.to == Zone::TaskState && !s.from.is_critical()));
    let moved: i64 = shifts.iter().map(|s| s.tokens).sum();
    assert_eq!(moved, 96, "at most max_shift a turn");
    assert_eq!(state.caps[Zone::TaskState.index()], 296);
    assert_eq!(
        state.caps.iter().sum::<i64>(),
        7 * 200,
        "shifts are zero-sum"
    );
}

#[test]
fn a_donor_never_goes_below_its_floor() {
    let mut limits = [ZoneLimits { floor: 0, cap: 200 }; 7];
    for zone in [
        Zone::ToolFailures,
        Zone::MemoryWorking,
        Zone::MemoryRecall,
        Zone::RagExternal,
    ] {
        limits[zone.index()].floor = 150;
    }
    let mut state = ControllerState::new(&limits);
    let entries = vec![entry(1, Zone::TaskState, Priority::High, 2_000)];
    observe_turns(&mut state, &limits, &entries, 30);
    for zone in [
        Zone::ToolFailures,
        Zone::MemoryWorking,
        Zone::MemoryRecall,
        Zone::RagExternal,
    ] {
        assert!(
            state.caps[zone.index()] >= 150,
            "{zone:?}: {:?}",
            state.caps
        );
    }
    assert!(state.caps[Zone::TaskState.index()] > 200);
}

fn live(specs: &[(Zone, Priority)]) -> Vec<Entry> {
    specs
        .iter()
        .enumerate()
        .map(|(seq, (zone, priority))| entry(seq as i64, *zone, *priority, 5))
        .collect()
}

#[test]
fn the_ceiling_accepts_updates_and_applies_each_policy() {
    let full = live(&[
        (Zone::Truth, Priority::High),
        (Zone::MemoryRecall, Priority::Normal),
        (Zone::RagExternal, Priority::Low),
    ]);
    // An update of a live key is always accepted.
    for policy in [
        CeilingPolicy::DropRecall,
        CeilingPolicy::DropLowPriority,
        CeilingPolicy::ForceCompact,
    ] {
        let decision = decide(&full, "k0", Zone::Truth, Priority::Low, 3, policy);
        assert!(decision.accepted && !decision.enforced);
        // The same key in another zone is a new entry.
        let other = decide(&full, "k0", Zone::TaskState, Priority::Low, 3, policy);
        assert!(other.enforced);
    }
    let drop_recall = decide(
        &full,
        "new",
        Zone::Truth,
        Priority::High,
        3,
        CeilingPolicy::DropRecall,
    );
    assert_eq!(
        (drop_recall.accepted, drop_recall.evicted.as_slice()),
        (true, &[(Zone::MemoryRecall, "k1".to_string())][..])
    );
    let recall_in = decide(
        &full,
        "new",
        Zone::MemoryRecall,
        Priority::High,
        3,
        CeilingPolicy::DropRecall,
    );
    assert!(!recall_in.accepted && recall_in.enforced);
    let low = decide(
        &full,
        "new",
        Zone::Truth,
        Priority::Critical,
        3,
        CeilingPolicy::DropLowPriority,
    );
    assert_eq!(low.evicted, [(Zone::MemoryRecall, "k1".to_string())]);
    let low_in = decide(
        &full,
        "new",
        Zone::Truth,
        Priority::Normal,
        3,
        CeilingPolicy::DropLowPriority,
    );
    assert!(!low_in.accepted);
    let compact = decide(
        &full,
        "new",
        Zone::Truth,
        Priority::Low,
        3,
        CeilingPolicy::ForceCompact,
    );
    assert!(compact.accepted && compact.compact);
    assert_eq!(
        compact.evicted,
        [
            (Zone::MemoryRecall, "k1".to_string()),
            (Zone::RagExternal, "k2".to_string())
        ]
    );
    // Under the ceiling nothing is enforced.
    assert!(
        !decide(
            &full,
            "new",
            Zone::Truth,
            Priority::Low,
            4,
            CeilingPolicy::DropRecall
        )
        .enforced
    );
}

#[test]
fn an_allocation_too_small_for_its_entry_goes_to_another_zone_s_entry_that_fits() {
    let mut limits = [ZoneLimits { floor: 0, cap: 100 }; 7];
    limits[Zone::Identity.index()].cap = 40;
    let mut rules = rules(limits);
    rules.min_cut_tokens = 64;
    // Identity is allocated 40 tokens first, too few to cut its 300-token entry
    // into; truth is allocated the 5 left, too few for its 10-token entry.
    let entries = vec![
        entry(1, Zone::Identity, Priority::High, 300),
        entry(2, Zone::Truth, Priority::High, 10),
    ];
    let planned = plan(&entries, 45, &rules, None, &words);
    let keys: Vec<&str> = planned
        .accepted
        .iter()
        .map(|a| entries[a.index].key.as_str())
        .collect();
    assert_eq!(keys, ["k2"]);
    let truth = &planned.zones[Zone::Truth.index()];
    assert_eq!((truth.accepted, truth.allocated), (10, 10));
    let identity = &planned.zones[Zone::Identity.index()];
    assert_eq!((identity.accepted, identity.dropped_count), (0, 1));
}

fn controlled(max_cap: i64) -> ControllerRules {
    ControllerRules {
        max_cap,
        ..ControllerRules::default()
    }
}

fn run_controller(
    state: &mut ControllerState,
    limits: &PerZone<ZoneLimits>,
    entries: &[Entry],
    max_cap: i64,
    turns: usize,
) -> Plan {
    let mut planned = plan(entries, max_cap, &rules(*limits), Some(&state.caps), &words);
    for _ in 0..turns {
        state.observe(&controlled(max_cap), limits, &planned.zones);
        planned = plan(entries, max_cap, &rules(*limits), Some(&state.caps), &words);
    }
    planned
}

#[test]
fn a_receiver_never_gets_more_cap_than_it_wants() {
    let limits = [ZoneLimits { floor: 0, cap: 200 }; 7];
    let mut state = ControllerState::new(&limits);
    let entries = vec![entry(1, Zone::TaskState, Priority::High, 700)];
    let planned = run_controller(&mut state, &limits, &entries, 2_000, 40);
    assert_eq!(state.caps[Zone::TaskState.index()], 700, "{:?}", state.caps);
    assert_eq!(planned.zones[Zone::TaskState.index()].accepted, 700);
}

#[test]
fn a_receiver_never_gets_more_cap_than_it_could_ever_be_allocated() {
    let mut limits = [ZoneLimits { floor: 0, cap: 200 }; 7];
    limits[Zone::Truth.index()] = ZoneLimits {
        floor: 300,
        cap: 400,
    };
    let mut state = ControllerState::new(&limits);
    // The global cap is 600 and truth's floor takes 300 of it first: task state can
    // never be allocated more than 300, whatever its cap.
    let entries = vec![
        entry(1, Zone::Truth, Priority::High, 300),
        entry(2, Zone::TaskState, Priority::High, 2_000),
    ];
    run_controller(&mut state, &limits, &entries, 600, 40);
    assert_eq!(state.caps[Zone::TaskState.index()], 300, "{:?}", state.caps);
}

#[test]
fn a_donor_keeps_the_cap_its_entries_need() {
    let limits = [ZoneLimits { floor: 0, cap: 200 }; 7];
    let mut state = ControllerState::new(&limits);
    // Working memory holds one 50-token entry and leaves most of its cap unused;
    // task state wants far more than it has.
    let entries = vec![
        entry(1, Zone::MemoryWorking, Priority::High, 50),
        entry(2, Zone::TaskState, Priority::High, 5_000),
    ];
    let planned = run_controller(&mut state, &limits, &entries, 4_000, 40);
    assert_eq!(
        state.caps[Zone::MemoryWorking.index()],
        50,
        "{:?}",
        state.caps
    );
    assert_eq!(planned.zones[Zone::MemoryWorking.index()].accepted, 50);
    assert!(state.caps[Zone::TaskState.index()] > 200);
}

#[test]
fn an_entry_cut_when_it_was_written_counts_as_truncated() {
    let limits = [ZoneLimits { floor: 0, cap: 200 }; 7];
    let mut state = ControllerState::new(&limits);
    // Stored cut to the zone's cap of 200, from 600 tokens.
    let mut cut = entry(1, Zone::MemoryWorking, Priority::High, 200);
    cut.full_tokens = 600;
    let planned = plan(
        std::slice::from_ref(&cut),
        2_000,
        &rules(limits),
        None,
        &words,
    );
    let working = &planned.zones[Zone::MemoryWorking.index()];
    assert_eq!(
        (working.demand, working.accepted, working.cut_at_write),
        (200, 200, 400)
    );
    run_controller(&mut state, &limits, &[cut], 2_000, 10);
    let cap = state.caps[Zone::MemoryWorking.index()];
    assert!(cap > 200 && cap <= 600, "{:?}", state.caps);
}

#[test]
fn a_once_entry_rewritten_is_offered_once_more() {
    let arena_rules = ArenaRules {
        plan: rules([ZoneLimits { floor: 0, cap: 200 }; 7]),
        controller: ControllerRules::default(),
        max_entries: 100,
        policy: CeilingPolicy::DropRecall,
    };
    let mut note = entry(1, Zone::MemoryWorking, Priority::High, 5);
    note.once = true;
    let mut state = ArenaState::default();
    let first = plan_turn(
        std::slice::from_ref(&note),
        &[],
        &state,
        &arena_rules,
        500,
        &words,
    );
    assert_eq!(first.once, [(Zone::MemoryWorking, "k1".to_string(), 1)]);
    observe_turn(&mut state, &arena_rules, &first.plan.zones, &first.once);
    let again = plan_turn(
        std::slice::from_ref(&note),
        &[],
        &state,
        &arena_rules,
        500,
        &words,
    );
    assert!(again.injected.is_empty(), "shown once");
    // The same key in another zone is another entry.
    let mut other = note.clone();
    other.zone = Zone::TaskState;
    other.seq = 2;
    let beside = plan_turn(
        std::slice::from_ref(&other),
        &[],
        &state,
        &arena_rules,
        500,
        &words,
    );
    assert_eq!(beside.injected, ["k1"]);
    // A rewrite is a new version: shown once more, then no more.
    note.seq = 3;
    note.text = "rewritten".into();
    let rewritten = plan_turn(
        std::slice::from_ref(&note),
        &[],
        &state,
        &arena_rules,
        500,
        &words,
    );
    assert_eq!(rewritten.injected, ["k1"]);
    observe_turn(
        &mut state,
        &arena_rules,
        &rewritten.plan.zones,
        &rewritten.once,
    );
    let after = plan_turn(
        std::slice::from_ref(&note),
        &[],
        &state,
        &arena_rules,
        500,
        &words,
    );
    assert!(after.injected.is_empty());
}

#[test]
fn a_state_of_an_older_build_still_hides_the_once_keys_it_showed() {
    let state: ArenaState =
        serde_json::from_str(r#"{"controller": null, "presented": ["k1"]}"#).unwrap();
    let mut note = entry(1, Zone::MemoryWorking, Priority::High, 5);
    note.once = true;
    assert!(state.was_shown(&note));
}
