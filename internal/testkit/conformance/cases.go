package conformance

// cases is CONFORMANCE.md, in order, then the cases of SPEC §5: each name
// is the case's number and a short name. Cases marked (remote) need a
// Killer, or a Bounded host for 46–49.
var cases = []testCase{
	// Registry.
	{"01_register_call_unload", case01},
	{"02_duplicate_name_names_owner", case02},
	{"03_registration_names_missing_field", case03},
	{"04_invalid_arguments_name_path", case04},
	{"05_unknown_tool", case05},
	// Stage 1.
	{"06_stage1_deny_when_negative", case06},
	{"07_stage1_pass_through", case07},
	{"08_stage1_outer_veto_skips_inner", case08},
	{"09_stage1_outer_overrides_inner_deny", case09},
	{"10_ask_without_approver_denies", case10},
	{"11_ask_approved_once", case11},
	{"12_ask_not_approved_denies", case12},
	{"13_newest_surviving_approver_decides", case13},
	{"14_stage1_listener_failure_denies", case14},
	{"15_approved_call_still_guarded", case15},
	// Stage 2.
	{"16_guard_denies_when_greater", case16},
	{"17_guard_denies_after_allow", case17},
	{"18_guard_order_does_not_matter", case18},
	{"19_first_denying_guard_reported", case19},
	{"20_guard_failure_denies", case20},
	{"21_no_guard_after_stage1_deny", case21},
	{"22_unload_guard_owner_removes_only_its_rule", case22},
	// Stage 3.
	{"23_wrapper_sees_start_and_end", case23},
	{"24_tool_timeout_cancels_body", case24},
	{"25_timeout_passes_without_declared_timeout", case25},
	{"26_wrapper_short_circuits", case26},
	{"27_retry_and_timeout_nesting", case27},
	{"28_caller_cancel_aborts", case28},
	{"29_tool_error_and_panic", case29},
	{"30_remote_tool_process_killed", case30},
	// Stage 4.
	{"31_post_replace", case31},
	{"32_post_block", case32},
	{"33_post_pass_through", case33},
	{"34_post_replace_keeps_failure", case34},
	{"35_post_failure_blocks", case35},
	{"36_no_post_after_denial", case36},
	// Stage 5.
	{"37_audit_sees_success_and_denial", case37},
	{"38_failing_observer_contained", case38},
	{"39_every_code_audited_once", case39},
	// Composition and lifetime.
	{"40_safety_guard_composition", case40},
	{"41_rules_apply_to_later_tools", case41},
	{"42_inject_gating", case42},
	{"43_remote_kill_removes_only_its_effects", case43},
	{"44_remote_critical_plugin_fails_closed", case44},
	{"45_effect_undo_order", case45},
	// Bounded remote listeners (SPEC §5).
	{"46_remote_hanging_stage1_listener_denies", case46},
	{"47_remote_hanging_stage3_listener_times_out", case47},
	{"48_remote_hanging_stage4_listener_blocks", case48},
	{"49_remote_wrapper_bound_excludes_next", case49},
}
