"""Validate the meta evaluation sets and hold the reference matcher.

    python3 check.py                 # validates tuning.json and heldout.json (prints counts only)
    from check import match          # match(expect, output_dict) -> (passed: bool, detail: str)

The matcher is the one the conventions in README.md describe; nothing here reads the project's code.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAINS = {"support", "finance", "operations", "code_review", "hr", "logistics"}
KINDS = {"threshold", "route", "escalation", "output_field", "tone", "forbidden"}
OPS = {"equals", "or_contains", "not_equals", "not_contains", "starts_with"}


def _norm(v):
    return v.strip().casefold() if isinstance(v, str) else v


def _eq(actual, expected):
    if isinstance(expected, bool) or expected is None:
        return actual is expected
    if isinstance(expected, (int, float)):
        if isinstance(actual, bool):
            return False
        if isinstance(actual, str):
            try:
                actual = float(actual.replace(",", "").replace("$", "").strip())
            except ValueError:
                return False
        return isinstance(actual, (int, float)) and abs(actual - expected) < 1e-9
    return _norm(actual) == _norm(expected) if isinstance(actual, str) else False


def _contains(actual, needle):
    needle = _norm(needle)
    if isinstance(actual, list):
        return any(isinstance(x, str) and needle in _norm(x) for x in actual)
    if isinstance(actual, str):
        return needle in _norm(actual)
    return False


def match(expect, output):
    """expect: a case's "expect" object; output: the JSON object the built system returned."""
    if not isinstance(output, dict):
        return False, "output is not a JSON object"
    field = expect["field"]
    present = field in output
    actual = output.get(field)          # a missing field reads as null
    positive = [k for k in ("equals", "or_contains", "starts_with") if k in expect]
    ok_pos = True
    if positive:
        ok_pos = False
        if "equals" in expect and _eq(actual, expect["equals"]):
            ok_pos = True
        if "or_contains" in expect and _contains(actual, expect["or_contains"]):
            ok_pos = True
        if "starts_with" in expect and isinstance(actual, str) and _norm(actual).startswith(_norm(expect["starts_with"])):
            ok_pos = True
    ok_neg = True
    if "not_equals" in expect and (not present or _eq(actual, expect["not_equals"])):
        ok_neg = False
    if "not_contains" in expect and (not present or _contains(actual, expect["not_contains"])):
        ok_neg = False
    passed = ok_pos and ok_neg
    return passed, f"{field}={json.dumps(actual, ensure_ascii=False)}"


def validate(path):
    errors = []
    data = json.load(open(path, encoding="utf-8"))
    assert isinstance(data, list)
    n_cons = n_cases = n_adv = 0
    for r in data:
        rid = r.get("id", "?")
        for key in ("id", "domain", "request", "constraints", "broken_variant_hint"):
            if key not in r:
                errors.append(f"{rid}: missing {key}")
        if r.get("domain") not in DOMAINS:
            errors.append(f"{rid}: bad domain")
        cons = r.get("constraints", [])
        if not 2 <= len(cons) <= 4:
            errors.append(f"{rid}: {len(cons)} constraints (want 2-4)")
        adv = 0
        for c in cons:
            n_cons += 1
            if c.get("kind") not in KINDS:
                errors.append(f"{rid}/{c.get('id')}: bad kind")
            if c.get("text", "") not in r.get("request", ""):
                errors.append(f"{rid}/{c.get('id')}: text is not verbatim in the request")
            cases = c.get("cases", [])
            if len(cases) < 2:
                errors.append(f"{rid}/{c.get('id')}: fewer than 2 cases")
            for k in cases:
                n_cases += 1
                e = k.get("expect", {})
                if not e.get("field") or not (set(e) - {"field"}) or not set(e) - {"field"} <= OPS:
                    errors.append(f"{rid}/{c.get('id')}: bad expect {e}")
                if e.get("field") and e["field"] not in r["request"]:
                    errors.append(f"{rid}/{c.get('id')}: field {e['field']} not named in the request")
                if not k.get("input") or not k.get("why"):
                    errors.append(f"{rid}/{c.get('id')}: case without input or why")
                if k.get("adversarial"):
                    adv += 1
        n_adv += adv
        if adv < 1:
            errors.append(f"{rid}: no adversarial case")
    return len(data), n_cons, n_cases, n_adv, errors


if __name__ == "__main__":
    bad = False
    for name in ("tuning.json", "heldout.json"):
        reqs, cons, cases, adv, errors = validate(os.path.join(HERE, name))
        print(f"{name}: {reqs} requests, {cons} constraints, {cases} cases ({adv} adversarial)")
        for e in errors:
            bad = True
            print("  ERROR", e)
    sys.exit(1 if bad else 0)
