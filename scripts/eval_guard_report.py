#!/usr/bin/env python3
"""Runs promptd's guard and gitleaks on the same files and prints the comparison (scripts/eval-guard).

Usage: eval_guard_report.py WORK SCANNER GITLEAKS
SCANNER is the promptd binary (run as `promptd scan --json FILE...`) or the guard's scan_files
example (`scan_files FILE...`, the same scan).
WORK holds `samples/<corpus>/index.json` (labelled samples, one file each; see
eval_guard_samples.py), `generated/index.json` (the same shape, from promptd's own generated
corpus) and `trees/<owner+name>/` (real source). Writes WORK/results.json: counts, per-family
recall, rules that fired, times; never a secret or a line of the scanned files.
"""

import collections
import json
import os
import subprocess
import sys
import tempfile
import time

VERBOSE = os.environ.get("EVAL_VERBOSE") == "1"
BATCH = 2000


def files_under(root):
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.join(d, n) for n in names]
    return sorted(out)


def promptd_scan(promptd, root, files):
    """{relative file: [rule ids]} and seconds, promptd's built-in rules alone."""
    hits = collections.defaultdict(list)
    env = {k: v for k, v in os.environ.items() if k not in ("GITLEAKS_BIN", "GITLEAKS_CONFIG")}
    elapsed = 0.0
    for i in range(0, len(files), BATCH):
        batch = files[i:i + BATCH]
        t = time.monotonic()
        cmd = [promptd, "scan", "--json"] if os.path.basename(promptd) == "promptd" else [promptd]
        p = subprocess.run([*cmd, *batch], capture_output=True, env=env, cwd=root)
        elapsed += time.monotonic() - t
        if p.returncode not in (0, 1):
            sys.exit(f"promptd scan failed ({p.returncode}): {p.stdout[-400:]!r}")
        for f in json.loads(p.stdout)["findings"]:
            hits[f["label"]].append(f["ruleId"])
    return hits, elapsed


def gitleaks_scan(gitleaks, root):
    """{relative file: [rule ids]} and seconds, gitleaks' default config."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITLEAKS_CONFIG", "GITLEAKS_CONFIG_TOML")}
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        t = time.monotonic()
        p = subprocess.run([gitleaks, "dir", os.path.abspath(root), "--no-banner", "--log-level",
                            "error", "--exit-code", "0", "--report-format", "json",
                            "--report-path", report], capture_output=True, env=env, cwd=scratch)
        elapsed = time.monotonic() - t
        if p.returncode != 0:
            sys.exit(f"gitleaks failed ({p.returncode}): {p.stderr[-400:]!r}")
        with open(report) as fh:
            findings = json.load(fh)
    hits = collections.defaultdict(list)
    prefix = os.path.abspath(root) + os.sep
    for f in findings:
        name = f["File"]
        if name.startswith(prefix):
            name = name[len(prefix):]
        hits[name].append(f["RuleID"])
    return hits, elapsed


def labelled(name, root, promptd, gitleaks):
    with open(os.path.join(root, "index.json")) as fh:
        index = json.load(fh)
    samples = index["samples"]
    base = os.path.dirname(root)
    files = [s["file"] for s in samples]
    ours, t_ours = promptd_scan(promptd, base, files)
    theirs, t_theirs = gitleaks_scan(gitleaks, root)
    # gitleaks reports paths under the corpus folder; promptd the paths it was given.
    theirs = {os.path.join(os.path.basename(root), k): v for k, v in theirs.items()}
    fam = collections.defaultdict(lambda: {"pos": 0, "neg": 0, "promptd": 0, "gitleaks": 0,
                                           "promptd_fp": 0, "gitleaks_fp": 0})
    fp_rules = {"promptd": collections.Counter(), "gitleaks": collections.Counter()}
    missed = []
    for s in samples:
        row = fam[s["family"]]
        row[s["label"]] += 1
        for who, hits in (("promptd", ours), ("gitleaks", theirs)):
            flagged = bool(hits.get(s["file"]))
            if s["label"] == "pos" and flagged:
                row[who] += 1
            if s["label"] == "neg" and flagged:
                row[who + "_fp"] += 1
                fp_rules[who].update(set(hits[s["file"]]))
        if s["label"] == "pos" and not ours.get(s["file"]):
            missed.append(s["file"])
    pos = sum(r["pos"] for r in fam.values())
    neg = sum(r["neg"] for r in fam.values())
    res = {
        "positives": pos, "negatives": neg, "families": len(fam),
        "skipped_expressions": index.get("skipped", 0),
        "promptd_found": sum(r["promptd"] for r in fam.values()),
        "gitleaks_found": sum(r["gitleaks"] for r in fam.values()),
        "promptd_fp": sum(r["promptd_fp"] for r in fam.values()),
        "gitleaks_fp": sum(r["gitleaks_fp"] for r in fam.values()),
        "promptd_fp_rules": dict(fp_rules["promptd"]),
        "gitleaks_fp_rules": dict(fp_rules["gitleaks"]),
        "families_detail": fam, "promptd_missed": missed,
        "seconds": {"promptd": t_ours, "gitleaks": t_theirs},
    }
    print(f"\n## {name}: {pos} positives in {len(fam)} families, {neg} negatives"
          f" ({res['skipped_expressions']} sample expressions not evaluable, left out)")
    rec = lambda n: n / pos if pos else 0.0  # noqa: E731
    print(f"{'':24} {'promptd':>10} {'gitleaks':>10}")
    print(f"{'recall':24} {rec(res['promptd_found']):>10.3f} {rec(res['gitleaks_found']):>10.3f}")
    print(f"{'positives found':24} {res['promptd_found']:>10} {res['gitleaks_found']:>10}")
    print(f"{'negatives flagged':24} {res['promptd_fp']:>10} {res['gitleaks_fp']:>10}")
    print(f"{'seconds':24} {t_ours:>10.2f} {t_theirs:>10.2f}")
    rows = [(k, r) for k, r in sorted(fam.items())
            if VERBOSE or r["promptd"] < r["pos"] or r["gitleaks"] < r["pos"]
            or r["promptd_fp"] or r["gitleaks_fp"]]
    if rows:
        print(f"per family (found/positives, flagged/negatives){'' if VERBOSE else '; families where both are perfect are left out (EVAL_VERBOSE=1 lists all)'}:")
        for k, r in rows:
            print(f"  {k:44} promptd {r['promptd']:>3}/{r['pos']:<3} fp {r['promptd_fp']}/{r['neg']:<3}"
                  f"  gitleaks {r['gitleaks']:>3}/{r['pos']:<3} fp {r['gitleaks_fp']}/{r['neg']}")
    for who in ("promptd", "gitleaks"):
        if fp_rules[who]:
            top = ", ".join(f"{k} {v}" for k, v in fp_rules[who].most_common(12))
            print(f"  rules on negatives, {who}: {top}")
    return res


def trees(root, promptd, gitleaks):
    out = {}
    total = {"files": 0, "bytes": 0}
    per = {"promptd": {"files": 0, "findings": 0, "seconds": 0.0, "rules": collections.Counter()},
           "gitleaks": {"files": 0, "findings": 0, "seconds": 0.0, "rules": collections.Counter()}}
    print("\n## real source trees (false positives: every finding in these is taken as one)")
    print(f"{'repository':44} {'files':>6} {'MB':>7}  {'promptd files':>13} {'gitleaks files':>14}")
    for repo in sorted(os.listdir(root)):
        path = os.path.join(root, repo)
        files = [os.path.relpath(f, path) for f in files_under(path)]
        size = sum(os.path.getsize(os.path.join(path, f)) for f in files)
        ours, t_ours = promptd_scan(promptd, path, files)
        theirs, t_theirs = gitleaks_scan(gitleaks, path)
        row = {"files": len(files), "bytes": size}
        for who, hits, t in (("promptd", ours, t_ours), ("gitleaks", theirs, t_theirs)):
            rules = collections.Counter(r for rs in hits.values() for r in rs)
            row[who] = {"flagged_files": len(hits), "findings": sum(rules.values()),
                        "seconds": t, "rules": dict(rules),
                        "flagged": sorted(hits) if who == "promptd" else None}
            per[who]["files"] += len(hits)
            per[who]["findings"] += sum(rules.values())
            per[who]["seconds"] += t
            per[who]["rules"].update(rules)
        total["files"] += len(files)
        total["bytes"] += size
        out[repo] = row
        print(f"{repo:44} {len(files):>6} {size / 1e6:>7.1f}  {len(ours):>13} {len(theirs):>14}")
    mb = total["bytes"] / 1e6
    print(f"{'total':44} {total['files']:>6} {mb:>7.1f}  {per['promptd']['files']:>13}"
          f" {per['gitleaks']['files']:>14}")
    print(f"{'':24} {'promptd':>10} {'gitleaks':>10}")
    print(f"{'flagged files / MB':24} {per['promptd']['files'] / mb:>10.3f}"
          f" {per['gitleaks']['files'] / mb:>10.3f}")
    print(f"{'findings / MB':24} {per['promptd']['findings'] / mb:>10.3f}"
          f" {per['gitleaks']['findings'] / mb:>10.3f}")
    print(f"{'seconds / MB':24} {per['promptd']['seconds'] / mb:>10.4f}"
          f" {per['gitleaks']['seconds'] / mb:>10.4f}")
    for who in ("promptd", "gitleaks"):
        top = ", ".join(f"{k} {v}" for k, v in per[who]["rules"].most_common(15))
        print(f"  rules that fired, {who}: {top or '-'}")
    return {"repos": out, "files": total["files"], "bytes": total["bytes"],
            "promptd": {k: v for k, v in per["promptd"].items()},
            "gitleaks": {k: v for k, v in per["gitleaks"].items()}}


def main():
    work, promptd, gitleaks = (os.path.abspath(a) for a in sys.argv[1:4])
    only = set(filter(None, os.environ.get("EVAL_GUARD_ONLY", "").split(",")))
    results = {}
    samples = os.path.join(work, "samples")
    for corpus, title in (("gitleaks", "gitleaks' rule samples (tps / fps)"),
                          ("trufflehog", "trufflehog's detector pattern tests")):
        if (not only or corpus in only) and os.path.exists(os.path.join(samples, corpus)):
            results[corpus] = labelled(title, os.path.join(samples, corpus), promptd, gitleaks)
    if (not only or "trees" in only) and os.path.isdir(os.path.join(work, "trees")):
        results["trees"] = trees(os.path.join(work, "trees"), promptd, gitleaks)
    gen = os.path.join(work, "generated", "coverage")
    if (not only or "generated" in only) and os.path.exists(os.path.join(gen, "index.json")):
        results["generated"] = labelled("promptd's own generated corpus (third column, not a "
                                        "headline)", gen, promptd, gitleaks)
    with open(os.path.join(work, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1, default=dict)
    print(f"\nresults: {os.path.join(work, 'results.json')}")


if __name__ == "__main__":
    main()
