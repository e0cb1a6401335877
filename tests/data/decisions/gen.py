#!/usr/bin/env python3
"""Generates tests/data/decisions/cases.jsonl: decision-engine cases with the answers of the
oracle (Google's cel-cpp via ../shared/oracle/cel_oracle.py) checked in beside them.

Run with the oracle's interpreter, from anywhere:

    /work/main/.venv-oracle/bin/python tests/data/decisions/gen.py

Each output line is one case: {"name", "now", "resource", "expr" (+ "vars") | "decision",
"expect"}. "expect" is the oracle's answer without its id. Timestamps and durations lose
precision in the oracle's JSON (microseconds; durations printed with %g), so for every value of
those types the generator asks the oracle again for `string(<value>)` and stores the exact text
as "text" beside "type" and "value". Non-finite doubles are stored as the strings "NaN",
"Infinity" and "-Infinity" so that the file stays strict JSON. The test
(tests/compiler/decisions.rs) never runs Python: rerun this script and commit its output when
the cases change.
"""
import datetime
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
ORACLE_CANDIDATES = [
    os.path.join(REPO, "..", "shared", "oracle", "cel_oracle.py"),
    "/work/shared/oracle/cel_oracle.py",
]

NOW = "2025-10-21T12:00:00Z"
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
NOW_NS = int((datetime.datetime(2025, 10, 21, 12, tzinfo=datetime.timezone.utc) - EPOCH).total_seconds()) * 10**9
SEC = 10**9
MIN = 60 * SEC

DEFAULT_PARAMS = [
    ("ref_time", 'condition("Reconciled").last_updated_time'),
    ("is_reconciled", 'condition("Reconciled").status == "True"'),
    ("has_ref_time", 'ref_time != ""'),
    ("is_new_resource", "resource.generation == 1 && !has_ref_time"),
    ("generation_mismatch", 'resource.generation > condition("Reconciled").observed_generation'),
    ("reconciled_and_stale",
     'is_reconciled && has_ref_time && now - timestamp(ref_time) > duration("30m")'),
    ("not_reconciled_and_debounced",
     '!is_reconciled && has_ref_time && now - timestamp(ref_time) > duration("10s")'),
]
DEFAULT_RESULT = ("is_new_resource || generation_mismatch || reconciled_and_stale"
                  " || not_reconciled_and_debounced")


def rfc3339(ns, offset_minutes=0, digits=None):
    """RFC 3339 text for `ns` nanoseconds since the epoch, shown at a UTC offset, with the
    fraction trimmed of trailing zeros (or padded to `digits` digits)."""
    secs, frac = divmod(ns, SEC)
    tz = datetime.timezone(datetime.timedelta(minutes=offset_minutes))
    t = (EPOCH + datetime.timedelta(seconds=secs)).astimezone(tz)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if digits is not None:
        text += "." + f"{frac:09d}"[:digits] if digits else ""
    elif frac:
        text += "." + f"{frac:09d}".rstrip("0")
    if offset_minutes == 0:
        return text + "Z"
    sign = "+" if offset_minutes > 0 else "-"
    h, m = divmod(abs(offset_minutes), 60)
    return f"{text}{sign}{h:02d}:{m:02d}"


def ago(ns, **kw):
    return rfc3339(NOW_NS - ns, **kw)


def cond(ty, status="True", observed=2, updated=None, **extra):
    c = {"type": ty, "status": status, "observed_generation": observed,
         "reason": "AllGood" if status == "True" else "Pending", "message": f"{ty} is {status}"}
    if updated is not None:
        c["last_updated_time"] = updated
        c["last_transition_time"] = updated
    c.update(extra)
    return c


def res(generation=2, conditions=None, **overrides):
    r = {
        "id": "cls-123", "kind": "Cluster", "name": "prod-cluster-1",
        "href": "/api/hyperfleet/v1/clusters/cls-123", "generation": generation,
        "created_time": "2025-10-01T00:00:00Z", "updated_time": "2025-10-21T11:00:00Z",
        "labels": {"env": "prod", "team": "platform", "tier": "gold"},
        "spec": {"region": "us-east-1", "replicas": 3},
        "status": {"conditions": conditions if conditions is not None else []},
    }
    for k, v in overrides.items():
        if v is DELETE:
            r.pop(k, None)
        else:
            r[k] = v
    return r


DELETE = object()


def without(resource, key):
    resource = dict(resource)
    resource.pop(key, None)
    return resource

# A resource reconciled 5 minutes ago at generation 2, with Ready and Available conditions.
HEALTHY = res(2, [cond("Reconciled", updated=ago(5 * MIN)), cond("Ready", updated=ago(20 * MIN)),
                  cond("Available", status="False", observed=1, updated=ago(2 * MIN))])

CASES = []


def expr(name, text, resource=None, vars=None, now=NOW):
    case = {"name": name, "now": now, "resource": HEALTHY if resource is None else resource,
            "expr": text}
    if vars is not None:
        case["vars"] = vars
    CASES.append(case)


def decision(name, resource, params=None, result=None, now=NOW):
    params = DEFAULT_PARAMS if params is None else params
    CASES.append({"name": name, "now": now, "resource": resource,
                  "decision": {"params": [{"name": n, "expr": e} for n, e in params],
                               "result": DEFAULT_RESULT if result is None else result}})


def reconciled(generation, status, observed, updated, **extra):
    """A resource whose only condition is Reconciled."""
    return res(generation, [cond("Reconciled", status, observed, updated, **extra)])


def default_rule_cases():
    d = decision
    d("default/new_no_conditions", res(1, []))
    d("default/new_no_status_key", res(1, status=DELETE))
    d("default/new_status_null", res(1, status=None))
    d("default/new_conditions_null", res(1, status={"conditions": None}))
    d("default/new_status_empty_object", res(1, status={}))
    d("default/gen2_no_conditions", res(2, []))
    d("default/recent_reconciled", reconciled(2, "True", 2, ago(5 * MIN)))
    d("default/stale_exactly_30m_is_not_stale", reconciled(2, "True", 2, ago(30 * MIN)))
    d("default/stale_30m_plus_1ns", reconciled(2, "True", 2, ago(30 * MIN + 1)))
    d("default/stale_30m_minus_1ns", reconciled(2, "True", 2, ago(30 * MIN - 1)))
    d("default/stale_30m_plus_half_second", reconciled(2, "True", 2, ago(30 * MIN + SEC // 2)))
    d("default/stale_31m", reconciled(2, "True", 2, ago(31 * MIN)))
    d("default/debounce_exactly_10s", reconciled(2, "False", 2, ago(10 * SEC)))
    d("default/debounce_10s_plus_1ns", reconciled(2, "False", 2, ago(10 * SEC + 1)))
    d("default/debounce_10s_minus_1ns", reconciled(2, "False", 2, ago(10 * SEC - 1)))
    d("default/debounce_5s", reconciled(2, "False", 2, ago(5 * SEC)))
    d("default/unknown_status_debounced", reconciled(2, "Unknown", 2, ago(11 * SEC)))
    d("default/lowercase_true_is_not_reconciled", reconciled(2, "true", 2, ago(5 * MIN)))
    d("default/generation_mismatch", reconciled(3, "True", 2, ago(1 * MIN)))
    d("default/observed_generation_ahead", reconciled(2, "True", 5, ago(1 * MIN)))
    d("default/generation_0", res(0, []))
    d("default/generation_0_reconciled", reconciled(0, "True", 0, ago(1 * MIN)))
    d("default/generation_huge", reconciled(9223372036854775807, "True", 2, ago(1 * MIN)))
    d("default/generation_1_reconciled_recent", reconciled(1, "True", 1, ago(1 * MIN)))
    d("default/generation_1_no_ref_time", reconciled(1, "True", 1, None))
    d("default/reconciled_without_ref_time", reconciled(2, "True", 2, None))
    d("default/duplicate_types_last_wins_stale",
      res(2, [cond("Reconciled", "True", 2, ago(1 * MIN)), cond("Reconciled", "True", 2, ago(2 * 60 * MIN))]))
    d("default/duplicate_types_last_wins_recent",
      res(2, [cond("Reconciled", "False", 1, ago(3 * 60 * MIN)), cond("Reconciled", "True", 2, ago(1 * MIN))]))
    d("default/offset_plus_0530_stale", reconciled(2, "True", 2, ago(35 * MIN, offset_minutes=330)))
    d("default/offset_minus_0800_exactly_30m", reconciled(2, "True", 2, ago(30 * MIN, offset_minutes=-480)))
    d("default/offset_minus_0800_30m_plus_1ns", reconciled(2, "True", 2, ago(30 * MIN + 1, offset_minutes=-480)))
    d("default/fraction_9_digits", reconciled(2, "True", 2, ago(30 * MIN + 123456789)))
    d("default/fraction_trailing_zeros", reconciled(2, "True", 2, ago(30 * MIN + SEC // 2, digits=9)))
    d("default/future_ref_time", reconciled(2, "False", 2, ago(-5 * MIN)))
    d("default/malformed_month_13", reconciled(2, "True", 2, "2025-13-01T00:00:00Z"))
    d("default/malformed_lowercase_t_z", reconciled(2, "True", 2, "2025-10-21t11:00:00z"))
    d("default/malformed_missing_offset", reconciled(2, "True", 2, "2025-10-21T11:00:00"))
    d("default/malformed_trailing_text", reconciled(2, "True", 2, "2025-10-21T11:00:00Zjunk"))
    d("default/malformed_leap_second", reconciled(2, "True", 2, "2025-06-30T23:59:60Z"))
    d("default/camel_case_fields", res(2, [{"type": "Reconciled", "status": "True",
                                            "observedGeneration": 2, "lastUpdatedTime": ago(5 * MIN)}]))
    d("default/null_fields", res(2, [{"type": "Reconciled", "status": "True", "observed_generation": None,
                                      "last_updated_time": None}]))
    d("default/generation_missing", without(res(2, []), "generation"))
    d("default/generation_string", res("2", []))
    d("default/conditions_not_a_list", res(2, status={"conditions": "oops"}))
    d("default/now_before_epoch_style_resource",
      reconciled(2, "False", 2, "1970-01-01T00:00:00Z"), now="1970-01-01T00:00:11Z")


def custom_decision_cases():
    d = decision
    both = [("ready", 'condition("Ready").status == "True"'),
            ("available", 'condition("Available").status == "True"')]
    d("custom/ready_and_available", HEALTHY, both, "ready && available")
    d("custom/ready_or_available", HEALTHY, both, "ready || available")
    d("custom/first_param_errors", HEALTHY, [("a", "1 / 0 == 1"), ("b", "true")], "b || a")
    d("custom/middle_param_errors", HEALTHY,
      [("a", "resource.generation"), ("b", 'int("x")'), ("c", "a + 1")], "c > 0")
    d("custom/error_absorbed_inside_param", HEALTHY,
      [("a", "resource.missing == 1 || true")], "a")
    d("custom/ternary_param", HEALTHY,
      [("tier", 'resource.labels["tier"] == "gold" ? duration("5m") : duration("1h")'),
       ("age", 'now - timestamp(condition("Reconciled").last_updated_time)')],
      "age > tier")
    d("custom/duration_param", HEALTHY,
      [("age", 'now - timestamp(condition("Ready").last_updated_time)')], 'age >= duration("20m")')
    d("custom/timestamp_param", HEALTHY,
      [("due", 'timestamp(condition("Reconciled").last_updated_time) + duration("30m")')], "now > due")
    d("custom/list_param", HEALTHY,
      [("types", "resource.status.conditions.map(c, c.type)")], '"Ready" in types')
    d("custom/non_bool_result_static", HEALTHY, [("a", "1")], "a")
    d("custom/non_bool_result_dynamic", HEALTHY, [], "resource.spec.replicas")
    d("custom/labels_rule", HEALTHY,
      [("prod", 'resource.labels["env"] == "prod"'), ("owned", '"team" in resource.labels')],
      "prod && owned")
    d("custom/ready_observed_behind", res(3, [cond("Ready", observed=2, updated=ago(MIN))]),
      [("behind", 'condition("Ready").observed_generation < resource.generation')], "behind")
    d("custom/params_chain", HEALTHY,
      [("g", "resource.generation"), ("g2", "g * 2"), ("g3", "g2 + g")], "g3 == 6")
    d("custom/overflow_param", res(9223372036854775807, []),
      [("next", "resource.generation + 1")], "next > 0")
    d("custom/result_error", HEALTHY, [("a", "true")], "a && resource.missing == 1")
    d("custom/result_error_absorbed", HEALTHY, [("a", "false")], "a && resource.missing == 1")
    d("custom/exists_over_conditions", HEALTHY,
      [("any_false", 'resource.status.conditions.exists(c, c.status == "False")')], "any_false")
    d("custom/string_param", HEALTHY,
      [("key", 'resource.kind + "/" + resource.id')], 'key == "Cluster/cls-123"')
    d("custom/all_default_params_on_healthy", HEALTHY)


def timestamp_cases():
    valid = {
        "utc": "2025-10-21T12:00:00Z",
        "plus_0530": "2025-10-21T17:30:00+05:30",
        "minus_0800": "2025-10-21T04:00:00-08:00",
        "fraction_1": "2025-10-21T12:00:00.5Z",
        "fraction_3": "2025-10-21T12:00:00.123Z",
        "fraction_9": "2025-10-21T12:00:00.123456789Z",
        "fraction_trailing_zeros": "2025-10-21T12:00:00.100000000Z",
        "year_1": "0001-01-01T00:00:00Z",
        "year_9999_max": "9999-12-31T23:59:59.999999999Z",
        "epoch": "1970-01-01T00:00:00Z",
        "before_epoch": "1969-12-31T23:59:59.999999999Z",
        "leap_day": "2024-02-29T00:00:00Z",
        "offset_plus_1400": "2025-10-21T12:00:00+14:00",
    }
    for name, text in valid.items():
        expr(f"timestamp/parse_{name}", f'timestamp("{text}")')
    # Invalid in Go's strict RFC 3339 (time.RFC3339, what cel-go and the Go sentinel use); cel-cpp
    # accepts a few of them.
    invalid = {
        "month_13": "2025-13-01T00:00:00Z",
        "day_32": "2025-10-32T00:00:00Z",
        "feb_30": "2025-02-30T00:00:00Z",
        "feb_29_non_leap": "2025-02-29T00:00:00Z",
        "hour_24": "2025-10-21T24:00:00Z",
        "lowercase_t": "2025-10-21t12:00:00Z",
        "lowercase_z": "2025-10-21T12:00:00z",
        "missing_offset": "2025-10-21T12:00:00",
        "trailing_text": "2025-10-21T12:00:00Zjunk",
        "leading_space": " 2025-10-21T12:00:00Z",
        "space_separator": "2025-10-21 12:00:00Z",
        "leap_second": "2016-12-31T23:59:60Z",
        "no_seconds": "2025-10-21T12:00Z",
        "offset_without_colon": "2025-10-21T12:00:00+0530",
        "empty": "",
        "word": "now",
        "fraction_10_digits": "2025-10-21T12:00:00.1234567891Z",
        "year_0": "0000-01-01T00:00:00Z",
        "dot_without_digits": "2025-10-21T12:00:00.Z",
    }
    for name, text in invalid.items():
        expr(f"timestamp/strict_{name}", f'timestamp("{text}")')
    expr("timestamp/string_of_offset_time", 'string(timestamp("2025-10-21T17:00:00.120+05:30"))')
    expr("timestamp/equal_across_offsets", 'now == timestamp("2025-10-21T17:30:00+05:30")')
    expr("timestamp/compare_1ns_before", 'now > timestamp("2025-10-21T11:59:59.999999999Z")')
    expr("timestamp/compare_equal_not_less", 'now < timestamp("2025-10-21T12:00:00Z")')
    expr("timestamp/from_int", "timestamp(1700000000)")
    expr("timestamp/to_int", 'int(timestamp("2025-01-01T00:00:00Z"))')
    expr("timestamp/to_int_before_epoch", 'int(timestamp("1969-12-31T23:59:59.5Z"))')
    expr("timestamp/string_now", "string(now)")
    for acc in ["getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
                "getHours", "getMinutes", "getSeconds", "getMilliseconds"]:
        expr(f"timestamp/{acc}", f'timestamp("2025-10-21T17:04:05.678+05:30").{acc}()')
    expr("timestamp/getHours_fixed_offset", 'now.getHours("+05:30")')
    expr("timestamp/getMinutes_negative_offset", 'now.getMinutes("-08:45")')
    expr("timestamp/getHours_iana_zone", 'now.getHours("America/Los_Angeles")')
    expr("timestamp/getDate_zone_crosses_day", 'timestamp("2025-10-21T23:30:00Z").getDate("Asia/Kolkata")')
    expr("timestamp/bad_zone", 'now.getHours("Mars/Olympus")')


def duration_cases():
    good = ["30m", "10s", "1h30m", "1.5h", "300ms", "-2s", "1us", "1ns", "0", "0s", "2h45m30.5s",
            ".5s", "5.s", "+5s", "-1.5h", "1h1h", "2562047h", "1000000s", "0.000000001s", "1.0000000001s"]
    bad = {"empty": "", "days": "1d", "no_unit": "5", "space": "1 s", "micro_sign": "1\u00b5s",
           "overflow_hours": "2562048h", "double_sign": "--1s", "unit_only": "h", "exponent": "1e3s"}
    for text in good:
        name = text.replace(".", "_").replace("+", "plus").replace("-", "minus") or "empty"
        expr(f"duration/parse_{name}", f'duration("{text}")')
    for name, text in bad.items():
        expr(f"duration/bad_{name}", f'duration("{text}")')
    expr("duration/getHours", 'duration("10000s").getHours()')
    expr("duration/getMinutes", 'duration("90m").getMinutes()')
    expr("duration/getSeconds", 'duration("1m30.5s").getSeconds()')
    expr("duration/getMilliseconds", 'duration("1.5s").getMilliseconds()')
    expr("duration/string", 'string(duration("1h30m0.25s"))')
    expr("duration/string_negative", 'string(duration("-90s"))')
    expr("duration/equal_spellings", 'duration("30m") == duration("1800s")')
    expr("duration/compare", 'duration("1h") > duration("59m59.999999999s")')
    expr("duration/compare_with_int_is_static_error", 'duration("1s") < 1')
    expr("duration/equal_to_int_is_false", 'duration("1s") == dyn(1)')
    expr("duration/negate", '-duration("30m")')


def arithmetic_cases():
    e = expr
    e("arith/now_minus_year_1_overflows", 'now - timestamp("0001-01-01T00:00:00Z")')
    e("arith/now_minus_1753", 'now - timestamp("1753-01-01T00:00:00Z")')
    e("arith/now_minus_1900", 'now - timestamp("1900-01-01T00:00:00Z")')
    e("arith/max_plus_1s_overflows", 'timestamp("9999-12-31T23:59:59Z") + duration("1s")')
    e("arith/min_minus_1ns_overflows", 'timestamp("0001-01-01T00:00:00Z") - duration("1ns")')
    e("arith/now_plus_30m", 'now + duration("30m")')
    e("arith/duration_plus_timestamp", 'duration("30m") + now')
    e("arith/now_minus_30m", 'now - duration("30m")')
    e("arith/age_equals_30m", 'now - timestamp("2025-10-21T11:30:00Z") == duration("30m")')
    e("arith/age_of_offset_time", 'now - timestamp("2025-10-21T16:59:59.5+05:30")')
    e("arith/age_1ns", 'now - (now - duration("1ns"))')
    e("arith/negative_age", 'now - timestamp("2025-10-21T12:00:01Z")')
    e("arith/duration_sum", 'duration("1h") + duration("30m")')
    e("arith/duration_difference_negative", 'duration("1h") - duration("90m")')
    e("arith/duration_sum_overflows", 'duration("2562047h") + duration("2562047h")')
    e("arith/timestamp_plus_timestamp_is_static_error", "now + now")
    e("arith/int_overflow_add", "resource.generation + 1", res(9223372036854775807, []))
    e("arith/int_overflow_mul", "resource.generation * 2", res(9223372036854775807, []))
    e("arith/int_overflow_negate_min", "-(resource.generation - 1) - 2", res(9223372036854775807, []))
    e("arith/int_min_div_minus_1", "-9223372036854775808 / -1")
    e("arith/int_min_mod_minus_1", "-9223372036854775808 % -1")
    e("arith/div_by_zero", "resource.generation / 0")
    e("arith/mod_by_zero", "resource.generation % 0")
    e("arith/div_by_zero_dynamic", "resource.generation / (resource.generation - 2)")
    e("arith/int_division_truncates", "-7 / 2")
    e("arith/int_modulus_sign", "-7 % 3")
    e("arith/uint_underflow", "1u - 2u")
    e("arith/uint_div_zero", "1u / 0u")
    e("arith/double_div_zero", "1.0 / 0.0")
    e("arith/double_nan", "0.0 / 0.0")
    e("arith/double_neg_div_zero", "-1.0 / 0.0")
    e("arith/dyn_int_times_two", "resource.spec.replicas * 2")
    e("arith/dyn_int_plus_double", "resource.spec.replicas + 0.5")
    e("arith/int_plus_double_static", "1 + 0.5")
    e("arith/mixed_compare", "resource.spec.replicas < 3.5")
    e("arith/mixed_equality", "1 == 1.0 && 1u == 1 && 2.0 == 2u")
    e("arith/string_concat", 'resource.kind + "/" + resource.id')
    e("arith/list_concat", "[1, 2] + [3]")
    e("arith/int_of_big_double", "int(1e19)")
    e("arith/int_of_negative_double", "int(-1.5)")
    e("arith/uint_of_negative", "uint(-1)")
    e("arith/double_of_generation", "double(resource.generation)")
    e("arith/int_of_string", 'int("42")')
    e("arith/int_of_bad_string", 'int("x")')
    e("arith/int_of_spaced_string", 'int(" 42")')
    e("arith/double_of_string", 'double("1.5")')
    e("arith/string_of_double", "string(1.5)")
    e("arith/string_of_bool", "string(true)")
    e("arith/string_of_int", "string(resource.generation)")


def logic_cases():
    e = expr
    e("logic/error_or_true", "1 / 0 == 1 || true")
    e("logic/true_or_error", "true || 1 / 0 == 1")
    e("logic/error_and_false", "1 / 0 == 1 && false")
    e("logic/false_and_error", "false && 1 / 0 == 1")
    e("logic/error_or_false", "1 / 0 == 1 || false")
    e("logic/false_or_error", "false || 1 / 0 == 1")
    e("logic/true_and_error", "true && 1 / 0 == 1")
    e("logic/error_and_true", "1 / 0 == 1 && true")
    e("logic/missing_key_or_true", "resource.missing == 1 || true")
    e("logic/true_or_missing_key", "true || resource.missing == 1")
    e("logic/missing_key_and_false", "resource.missing == 1 && false")
    e("logic/two_errors_or", "resource.missing == 1 || 1 / 0 == 1")
    e("logic/not_error", "!(1 / 0 == 1)")
    e("logic/ternary_true_branch", 'resource.generation == 2 ? "two" : "other"')
    e("logic/ternary_skips_error_branch", "false ? 1 / 0 : 2")
    e("logic/ternary_skips_error_branch_2", "true ? 2 : 1 / 0")
    e("logic/ternary_error_condition", "1 / 0 == 0 ? 1 : 2")
    e("logic/ternary_mixed_types", 'resource.generation > 1 ? "big" : 1')
    e("logic/nested_ternary", 'resource.generation == 1 ? "new" : resource.generation == 2 ? "second" : "later"')
    e("logic/exists_absorbs_error", "[1, 0].exists(x, 1 / x == 1)")
    e("logic/exists_only_error", "[0].exists(x, 1 / x == 1)")
    e("logic/all_error_without_false", "[1, 0].all(x, 1 / x == 1)")
    e("logic/all_false_absorbs_error", "[2, 0].all(x, 1 / x == 1)")
    e("logic/exists_one_error", "[1, 0].exists_one(x, 1 / x == 1)")
    e("logic/in_list", "2 in [1, 2, 3]")
    e("logic/in_map", '"env" in resource.labels')
    e("logic/not_in_map", '!("nope" in resource.labels)')


def has_and_field_cases():
    e = expr
    e("has/status", "has(resource.status)")
    e("has/status_null", "has(resource.status)", res(1, status=None))
    e("has/status_missing", "has(resource.status)", res(1, status=DELETE))
    e("has/labels", "has(resource.labels)")
    e("has/spec", "has(resource.spec)")
    e("has/spec_region", "has(resource.spec.region)")
    e("has/spec_missing_field", "has(resource.spec.zone)")
    e("has/spec_absent_field_of_absent", "has(resource.spec.region)", res(1, [], spec=DELETE))
    e("has/label_present", "has(resource.labels.env)")
    e("has/label_absent", "has(resource.labels.nope)")
    e("has/missing_top_level", "has(resource.owner)")
    e("has/conditions_of_empty_status", "has(resource.status.conditions)", res(1, status={}))
    e("has/conditions_present", "has(resource.status.conditions)")
    e("field/id", "resource.id")
    e("field/kind", "resource.kind")
    e("field/name", "resource.name")
    e("field/href", "resource.href")
    e("field/generation", "resource.generation")
    e("field/created_time", "resource.created_time")
    e("field/updated_time_trailing_zeros", "resource.updated_time",
      res(2, [], updated_time="2025-10-21T11:00:00.500000Z"))
    e("field/spec_region", "resource.spec.region")
    e("field/spec_replicas", "resource.spec.replicas")
    e("field/spec_missing", "resource.spec.zone")
    e("field/missing_top_level", "resource.owner")
    e("field/index_resource", 'resource["id"]')
    e("field/labels_env", "resource.labels.env")
    e("field/labels_index", 'resource.labels["tier"]')
    e("field/labels_missing_key", 'resource.labels["missing"]')
    e("field/labels_absent", "size(resource.labels)", res(1, [], labels=DELETE))
    e("field/generation_float", "resource.generation", res(2.0, []))
    e("field/generation_beyond_int64", "resource.generation", res(9223372036854775808, []))
    e("field/conditions_size", "resource.status.conditions.size()")
    e("field/conditions_first_type", "resource.status.conditions[0].type")
    e("field/conditions_index_out_of_range", "resource.status.conditions[5]")
    e("field/conditions_camel_case_field", "resource.status.conditions[0].last_updated_time",
      res(2, [{"type": "Ready", "lastUpdatedTime": "2025-10-21T11:00:00Z"}]))


def condition_cases():
    e = expr
    e("condition/status", 'condition("Ready").status')
    e("condition/reason", 'condition("Ready").reason')
    e("condition/message", 'condition("Available").message')
    e("condition/observed_generation", 'condition("Available").observed_generation')
    e("condition/type", 'condition("Ready").type')
    e("condition/last_transition_time", 'condition("Ready").last_transition_time')
    e("condition/missing_status", 'condition("Missing").status == ""')
    e("condition/missing_type_is_empty", 'condition("Missing").type')
    e("condition/missing_observed_generation", 'condition("Missing").observed_generation == 0')
    e("condition/missing_time", 'condition("Missing").last_updated_time')
    e("condition/dynamic_name", "condition(resource.kind + \"Ready\").status",
      res(1, [cond("ClusterReady", "True", 1, ago(MIN))]))
    e("condition/unknown_field", 'condition("Ready").colour')
    e("condition/duplicate_last_wins", 'condition("Ready").status',
      res(1, [cond("Ready", "False", 1, ago(MIN)), cond("Ready", "True", 1, ago(MIN))]))
    e("condition/other_conditions_rule",
      'condition("Available").status == "True" || condition("Ready").status != "False"')
    e("condition/ready_behind_generation",
      'condition("Ready").observed_generation < resource.generation', res(3, [cond("Ready", observed=2)]))
    e("condition/time_with_offset", 'condition("Ready").last_updated_time',
      res(1, [cond("Ready", updated="2025-10-21T17:00:00+05:30")]))
    e("condition/time_with_fraction_zeros", 'condition("Ready").last_updated_time',
      res(1, [cond("Ready", updated="2025-10-21T11:00:00.250000Z")]))
    e("condition/malformed_time", 'condition("Ready").last_updated_time',
      res(1, [cond("Ready", updated="2025-13-01T00:00:00Z")]))
    e("condition/status_of_malformed_time_condition", 'condition("Ready").status',
      res(1, [cond("Ready", updated="2025-13-01T00:00:00Z")]))
    e("condition/age_of_offset_time", 'now - timestamp(condition("Ready").last_updated_time)',
      res(1, [cond("Ready", updated="2025-10-21T17:00:00+05:30")]))


def macro_and_string_cases():
    e = expr
    e("macro/labels_exists", 'resource.labels.exists(k, k == "env")')
    e("macro/labels_all_nonempty", 'resource.labels.all(k, resource.labels[k] != "")')
    e("macro/labels_exists_one", 'resource.labels.exists_one(k, k.startsWith("t"))')
    e("macro/labels_filter_size", 'resource.labels.filter(k, k.startsWith("t")).size()')
    e("macro/labels_map_contains", '"env=prod" in resource.labels.map(k, k + "=" + resource.labels[k])')
    e("macro/labels_map_size", 'resource.labels.map(k, k + "=" + resource.labels[k]).size()')
    e("macro/labels_size", "size(resource.labels)")
    e("macro/empty_labels_all", 'resource.labels.all(k, k == "x")', res(1, [], labels={}))
    e("macro/empty_labels_exists", "resource.labels.exists(k, true)", res(1, [], labels={}))
    e("macro/conditions_exists", 'resource.status.conditions.exists(c, c.type == "Ready" && c.status == "True")')
    e("macro/conditions_all_true", 'resource.status.conditions.all(c, c.status == "True")')
    e("macro/conditions_filter", 'resource.status.conditions.filter(c, c.status == "True").size()')
    e("macro/conditions_map_types", "resource.status.conditions.map(c, c.type)")
    e("macro/conditions_map_generations", "resource.status.conditions.map(c, c.observed_generation)")
    e("macro/conditions_exists_one_duplicates", 'resource.status.conditions.exists_one(c, c.type == "Ready")',
      res(1, [cond("Ready"), cond("Ready")]))
    e("macro/map_filter_form", "[1, 2, 3, 4].map(x, x % 2 == 0, x * 10)")
    e("macro/nested", "[[1, 2], [3]].all(l, l.exists(x, x > 0))")
    e("string/starts_with", 'resource.name.startsWith("prod-")')
    e("string/ends_with", 'resource.name.endsWith("-1")')
    e("string/contains", 'resource.name.contains("cluster")')
    e("string/matches", 'resource.name.matches("^prod-[a-z]+-[0-9]+$")')
    e("string/matches_partial", 'resource.name.matches("cluster")')
    e("string/matches_bad_pattern_dynamic", 'resource.name.matches(resource.kind + "(")')
    e("string/size", "size(resource.name)")
    e("string/size_unicode", 'size("h\u00e9llo")')
    e("string/compare", '"a" < "b" && "B" < "a"')
    e("string/in_list", 'resource.labels.env in ["prod", "staging"]')
    e("vars/stale_ref", 'now - timestamp(ref) > duration("30m")', vars={"ref": "2025-10-21T11:29:59Z"})
    e("vars/fresh_ref", 'now - timestamp(ref) > duration("30m")', vars={"ref": "2025-10-21T11:30:00Z"})
    e("vars/int_plus_one", "n + 1", vars={"n": 5})
    e("vars/double", "x * 2.0", vars={"x": 1.25})
    e("vars/list_size", "l.size() == 3 && l[2] == 3", vars={"l": [1, 2, 3]})
    e("vars/map_field", "m.a.b", vars={"m": {"a": {"b": "deep"}}})
    e("vars/null", "v == null", vars={"v": None})
    e("vars/list_value", "l.map(x, x * 2)", vars={"l": [1, 2, 3]})
    e("vars/map_value", '{"a": n, "b": [n, 2.5, "s", true, null]}', vars={"n": 7})


def conversion_and_misc_cases():
    e = expr
    e("misc/map_duplicate_key", "{'a': 1, 'a': 2}")
    e("misc/list_mixed_types", "[1, 'a']")
    e("misc/in_mixed_numeric_static", "1 in [1.0]")
    e("misc/in_mixed_numeric_dynamic", "dyn(1) in [1.0, 2.0]")
    e("misc/list_index_uint", "[1, 2][1u]")
    e("misc/list_index_dynamic_uint", "[1, 2][dyn(1u)]")
    e("misc/map_key_uint_for_int", "{1: 'a'}[dyn(1u)]")
    e("misc/map_key_double_for_int", "{1: 'a'}[dyn(1.0)]")
    e("misc/heterogeneous_list_equality", "dyn([1]) == [1.0]")
    e("misc/map_equality_mixed_values", "{'a': 1} == {'a': 1.0}")
    e("misc/dyn_int_equals_uint", "dyn(1) == 1u")
    e("misc/type_of_int", "type(resource.generation) == int")
    e("misc/type_of_list", "type(resource.status.conditions) == list")
    e("misc/type_of_now", "type(now) == google.protobuf.Timestamp")
    e("misc/type_of_duration", 'type(duration("1s")) == google.protobuf.Duration')
    e("misc/shadowed_iteration_variable", "[1, 2].exists(x, [3].exists(x, x == 3))")
    e("misc/empty_list_macros", "[].all(x, x > 0) && ![].exists_one(x, true) && ![].exists(x, true)")
    e("misc/has_on_zero_condition", 'has(condition("Missing").status)')
    for name, text in {"one": "1.0", "big": "1e100", "negative_zero": "-0.0", "tenth": "0.1",
                       "nine_digits": "123456789.0", "million": "1000000.0", "e21": "1e21",
                       "small": "1e-5", "third": "1.0 / 3.0"}.items():
        e(f"convert/string_of_double_{name}", f"string({text})")
    for name, text in {"inf": "inf", "nan": "NaN", "too_big": "1e400", "exponent": "2.5e3"}.items():
        e(f"convert/double_of_string_{name}", f'double("{text}")')
    for name, text in {"hex": "0x10", "min": "-9223372036854775808", "plus": "+5",
                       "beyond_max": "9223372036854775808"}.items():
        e(f"convert/int_of_string_{name}", f'int("{text}")')
    e("convert/int_of_double_2_63", "int(9223372036854775807.0)")
    e("convert/int_of_double_minus_2_63", "int(-9223372036854775808.0)")
    e("convert/int_of_double_nan", "int(0.0 / 0.0)")
    e("convert/uint_of_max_string", 'uint("18446744073709551615")')
    e("convert/uint_of_double", "uint(3.7)")
    for name, text in {"upper": "TRUE", "yes": "yes", "t": "t", "title": "True", "one": "1"}.items():
        e(f"convert/bool_of_string_{name}", f'bool("{text}")')
    e("regex/case_insensitive_flag", "'Prod'.matches('(?i)^prod$')")
    e("regex/unicode_class", "'\u00e9'.matches('^\\\\pL$')")
    e("regex/empty_pattern", "'abc'.matches('')")
    e("regex/dot_does_not_match_newline", "'a\\nb'.matches('a.b')")
    e("regex/digit_class", "resource.name.matches('\\\\d$')")
    e("string/unicode_compare_and_size", "'a' < '\u00e9' && size('\U0001F600') == 1")
    e("string/escapes", "'\\u00e9' == '\u00e9' && r'\\d' == '\\\\d'")
    e("string/bytes_size", "size(b'\\xff\\x00')")
    e("string/contains_empty", "'abc'.contains('') && ''.startsWith('')")
    e("timestamp/day_of_week_sunday", 'timestamp("2025-10-19T00:00:00Z").getDayOfWeek()')
    e("timestamp/day_of_year_jan_1", 'timestamp("2025-01-01T00:00:00Z").getDayOfYear()')
    e("timestamp/int_of_year_1", 'int(timestamp("0001-01-01T00:00:00Z"))')
    e("timestamp/minus_negative_duration", 'now - duration("-1h")')
    e("timestamp/from_int_out_of_range", "timestamp(253402300800)")
    e("duration/minus_zero", 'duration("-0")')
    e("duration/fractional_minutes_seconds", 'duration("1.5m").getSeconds()')
    e("duration/negative_getMinutes", 'duration("-90s").getMinutes()')


def naming_decision_cases():
    d = decision
    d("naming/param_named_now", HEALTHY, [("now", "1")], "now == 1")
    d("naming/param_named_resource", HEALTHY, [("resource", '"x"')], 'resource == "x"')
    d("naming/duplicate_param_names", HEALTHY, [("a", "1"), ("a", "2")], "a == 2")
    d("naming/param_shadows_builtin_name", HEALTHY, [("size", "3")], "size == 3")
    d("naming/empty_params_literal_result", HEALTHY, [], "true")


def run_oracle(requests):
    oracle = next((p for p in ORACLE_CANDIDATES if os.path.exists(p)), None)
    if oracle is None:
        sys.exit("cel_oracle.py not found in ../shared/oracle or /work/shared/oracle")
    text = "".join(json.dumps(r) + "\n" for r in requests)
    out = subprocess.run([sys.executable, oracle], input=text, capture_output=True, text=True, check=True)
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    if len(answers) != len(requests):
        sys.exit(f"oracle answered {len(answers)} of {len(requests)} requests:\n{out.stderr}")
    for req, ans in zip(requests, answers):
        if ans.get("id") != req["id"] or str(ans.get("error", "")).startswith("oracle:"):
            sys.exit(f"oracle failed on {req['id']}: {ans}")
        ans.pop("id", None)
    return answers


def strict(value):
    """Non-finite floats as strings, so the output is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [strict(v) for v in value]
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    return value


def needs_text(tagged):
    return tagged.get("type") in ("TIMESTAMP", "DURATION")


def request(case, i, **override):
    r = {k: v for k, v in case.items() if k != "name"}
    r.update(override)
    r["id"] = str(i)
    return r


def main():
    for group in (default_rule_cases, custom_decision_cases, timestamp_cases, duration_cases,
                  arithmetic_cases, logic_cases, has_and_field_cases, condition_cases,
                  macro_and_string_cases, conversion_and_misc_cases, naming_decision_cases):
        group()
    names = [c["name"] for c in CASES]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        sys.exit(f"duplicate case names: {sorted(dupes)}")
    answers = run_oracle([request(c, i) for i, c in enumerate(CASES)])
    # Exact text of timestamps and durations: ask again for string(<value>).
    follow, where = [], []
    for i, (case, ans) in enumerate(zip(CASES, answers)):
        if "expr" in case and needs_text(ans):
            follow.append(request(case, len(follow), expr=f"string({case['expr']})"))
            where.append((ans, None))
        elif "decision" in case:
            extra = [{"name": f"text_of_{p}", "expr": f"string({p})"}
                     for p, tagged in ans["params"].items() if needs_text(tagged)]
            if extra:
                dec = dict(case["decision"])
                dec["params"] = case["decision"]["params"] + extra
                follow.append(request(case, len(follow), decision=dec))
                where.append((ans, [p for p, t in ans["params"].items() if needs_text(t)]))
    for (ans, params), text in zip(where, run_oracle(follow) if follow else []):
        if params is None:
            ans["text"] = text["value"]
        else:
            for p in params:
                ans["params"][p]["text"] = text["params"][f"text_of_{p}"]["value"]
    out_path = os.path.join(HERE, "cases.jsonl")
    with open(out_path, "w", encoding="utf-8") as out:
        for case, ans in zip(CASES, answers):
            line = dict(case)
            line["expect"] = strict(ans)
            out.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"wrote {len(CASES)} cases to {out_path}")


if __name__ == "__main__":
    main()
