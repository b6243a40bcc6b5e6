"""aqua report and aqua regress on real runs of the aqua eval CLI, and their statistics."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.data import TRACK_FILE_STEMS, load_json_file
from aqua_tasks.core.extract.registry import EXTRACTOR_VERSIONS
from aqua_tasks.core.manifest import DOC_FIELDS, MANIFEST_FIELDS
from aqua_tasks.core.scoring import as_outcome
from aqua_tasks.core.stats import wilson_interval
from aqua_tasks.gate.paired import (
    TESTED_METRICS,
    conditional_accuracy,
    discordant_pairs,
    holm,
    mcnemar_exact_p,
    paired_bootstrap_ca,
)
from aqua_tasks.reports.charts import plot_table
from aqua_tasks.reports.folder import write_report
from aqua_tasks.reports.run_metrics import load_run_metrics, split_task
from aqua_tasks.reports.tables import COLUMNS, UNPARSED, build_table
from aqua_tasks.runs import read_run
from eval_plugins.cli import aqua_eval as cli_eval

pytestmark = pytest.mark.slow  # four aqua eval runs over released tracks, then reports
LIMIT = 480  # 120 clips of the track: every clip's four items are in the run


def _reply(entry: dict, correct: bool) -> str:
    index = (
        entry["options"].index(entry["answer"])
        if correct
        else next(k for k, o in enumerate(entry["options"]) if o != entry["answer"])
    )
    return f"The answer is ({chr(ord('a') + index)}) {entry['options'][index]}."


def base_correct(kind: str, clip: int) -> bool:
    """Baseline pattern: Solvable right unless clip%4==0; AAD iff even; IASD/IAQD mostly."""
    return {
        "Solvable": clip % 4 != 0,
        "AAD": clip % 2 == 0,
        "IASD": clip % 3 != 0,
        "IAQD": clip % 5 != 0,
    }[kind]


def regressed_correct(kind: str, clip: int) -> bool:
    """Half of the right Solvable answers turned wrong (clips 1, 2 mod 4)."""
    if kind == "Solvable" and clip % 4 in (1, 2):
        return False
    return base_correct(kind, clip)


def noisy_correct(kind: str, clip: int) -> bool:
    """Two Solvable answers lost and two gained; one AAD answer changed."""
    if kind == "Solvable" and clip in (0, 4, 1, 2):
        return not base_correct(kind, clip)
    if kind == "AAD" and clip == 6:
        return False
    return base_correct(kind, clip)


def write_replies(folder: Path, released_dir: Path, rule) -> Path:
    folder.mkdir(parents=True)
    stem = TRACK_FILE_STEMS["animal"]
    entries = load_json_file(released_dir / f"{stem}.json")
    for n, entry in enumerate(entries):
        entry["response"] = _reply(entry, rule(entry["type"], n // 4))
    (folder / f"{stem}.json").write_text(json.dumps(entries))
    return folder


def aqua_eval(out: Path, released_dir: Path, *args: str) -> Path:
    """One run of the real aqua eval command line (in process), text-only."""
    metadata = json.dumps({"data_dir": str(released_dir), "audio": False})
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_eval.main(
            [*args, "--metadata", metadata, "--output_path", str(out), "--log_samples"]
        )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, released_dir, builtin_index_parsed_once) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    out = {}
    rules = {"base": base_correct, "regressed": regressed_correct, "noisy": noisy_correct}
    for name, rule in rules.items():
        replies = write_replies(root / f"replies-{name}", released_dir, rule)
        out[name] = aqua_eval(
            root / name,
            released_dir,
            *("--model", "aqua-replay", "--model_args", f"path={replies}"),
            *("--tasks", "aqua_animal", "--limit", str(LIMIT)),
        )
    out["reject"] = aqua_eval(
        root / "reject",
        released_dir,
        *("--model", "aqua-always-reject", "--tasks", "aqua_animal,aqua_vocal", "--limit", "40"),
    )
    return out


def lm_eval_metrics(run: Path) -> dict[str, dict[str, float]]:
    results = json.loads(max(run.rglob("results_*.json")).read_text())
    return {
        task: {k.split(",")[0]: v for k, v in m.items() if "," in k and "_stderr" not in k}
        for task, m in results["results"].items()
    }


def regress(capsys, *args: str) -> tuple[int, str, str]:
    code = cli_regress.main([*args, "--no-progress", "--n-boot", "2000"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- aqua report -------------------------------------------------------------------------


def test_report_table_values_equal_the_runs_metrics_in_markdown_and_csv(runs, capsys, tmp_path):
    code = cli_report.main(
        [str(runs["reject"]), str(runs["base"]), "--out", str(tmp_path), "--paper", "--no-chart"]
    )
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "table.csv").open()))
    labels = [r["model"] for r in rows]
    assert labels[:2] == ["aqua-always-reject", "aqua-replay (path=replies-base)"]
    assert "Qwen2-Audio (published)" in labels and "Qwen2.5-Omni† (published)" in labels
    for row, run in zip(rows, (runs["reject"], runs["base"]), strict=False):
        for task, m in lm_eval_metrics(run).items():
            track = split_task(task)[1]  # the pooled row `aqua` is column `all`
            for column, metric, n_key in (*COLUMNS, UNPARSED):
                value = row[f"{track}_{column.lower()}"]
                if math.isnan(m[metric]):
                    assert value == ""
                else:
                    assert float(value) == pytest.approx(100 * m[metric], abs=1e-6)
                assert int(row[f"{track}_{column.lower()}_n"]) == m[n_key]
    base = lm_eval_metrics(runs["base"])["aqua_animal"]
    assert base["acc"] == pytest.approx(0.75) and base["n_ca_aad"] == 90
    markdown = (tmp_path / "table.md").read_text()
    assert "| aqua-replay (path=replies-base) | aqua-rules | 75.0 (120) | 33.3 (90) |" in markdown
    assert "| aqua-always-reject | aqua-rules | 0.0 (10) | — (0) |" in markdown
    # All tracks pooled: Ori 2 of 20 Solvable items; CA over the 2 clips with Solvable right.
    assert "| 10.0 (20) | 100.0 (2) | 100.0 (2) | 100.0 (2) | 0.0 (80) |" in markdown
    published = "| Qwen2-Audio (published) | authors' rule (official), published | 91.9 | 23.6 |"
    assert published in markdown
    assert "copied from Kuan & Lee" in markdown and "text-only" in markdown
    published = next(r for r in rows if r["model"] == "GPT-4o-Audio (published)")
    assert published["published"] == "1" and "music_ori" not in published  # no run has music


def test_report_chart_shows_intervals_n_the_both_right_share_and_each_rows_extractor(
    runs, tmp_path
):
    table = build_table(
        [load_run_metrics(runs["reject"]), load_run_metrics(runs["base"])],
        labels=["rej", "base"],
        published=True,
    )
    written = write_report(table, tmp_path, vector="pdf")
    png = written["chart"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert written["chart_vector"].read_bytes()[:5] == b"%PDF-"
    fig = plot_table(table)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["Animal", "Vocal", "All released tracks (clips pooled; MMAU not in it)"]
    animal, vocal, pooled = fig.axes
    bars = {p.get_gid(): p.get_height() for p in animal.patches}
    assert bars["animal|base|Ori"] == pytest.approx(75.0)
    assert bars["animal|base|AAD"] == pytest.approx(100 * 30 / 90)
    # Inside each CA bar, the clips right on both items: Ori × CA.
    assert bars["animal|base|AAD|joint"] == pytest.approx(75.0 * 100 * 30 / 90 / 100)
    # Rejecting everything: CA 100 % but only the 20 % of Vocal clips right on both.
    vocal_bars = {p.get_gid(): p.get_height() for p in vocal.patches}
    assert vocal_bars["vocal|rej|IAQD"] == 100.0
    assert vocal_bars["vocal|rej|IAQD|joint"] == pytest.approx(20.0)
    assert "vocal|base|Ori" not in vocal_bars  # the replay run has no vocal task
    texts = {t.get_gid(): t.get_text() for t in animal.texts}
    assert texts["animal|base|AAD|label"] == "33\nn=90"
    assert texts["animal|rej|AAD|label"] == "n/a"  # undefined, not an empty bar
    # A CA below 1 % is written out (0.4), not a bar that looks like missing data.
    assert texts["animal|Audio Flamingo 3 (published)|IASD|label"] == "0.4"
    # 95 % intervals: Wilson for Ori, clip bootstrap for CA.
    whiskers = {c.get_gid(): c for c in animal.collections}
    (segment,) = whiskers["animal|base|Ori|interval"].get_segments()
    assert segment[:, 1] == pytest.approx([100 * x for x in wilson_interval(90, 120)])
    labels = [t.get_text() for t in pooled.get_xticklabels()]
    assert labels[:2] == ["rej\n[aqua-rules]", "base\n[aqua-rules]"]
    assert labels[2] == "Qwen2-Audio (published)\n[authors' rule (official), published]"
    pooled_bars = {p.get_gid(): p.get_height() for p in pooled.patches}
    assert pooled_bars["all|rej|Ori"] == pytest.approx(10.0)
    assert not any("published" in gid for gid in pooled_bars)  # no pooled published figure


def test_report_rescores_runs_with_the_authors_rule_for_comparison(runs, tmp_path, capsys):
    code = cli_report.main(
        [
            str(runs["base"]),
            *("--extractor", "aqua-rules", "--extractor", "official"),
            *("--out", str(tmp_path), "--no-chart", "--json"),
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    ours, official = rows[0], rows[1]
    assert ours["extractor"] == "aqua-rules" and official["extractor"] == "official"
    assert ours["label"].endswith("[aqua-rules]") and official["label"].endswith("[official]")
    # Replies "The answer is (x) ..." are read as (e) by the authors' rule ("the").
    assert official["cells"]["animal"]["Ori"]["value"] < ours["cells"]["animal"]["Ori"]["value"]
    low, high = ours["cells"]["animal"]["Ori"]["low"], ours["cells"]["animal"]["Ori"]["high"]
    assert low < ours["cells"]["animal"]["Ori"]["value"] < high
    results_only = tmp_path / "results.json"
    shutil.copy(max(runs["base"].rglob("results_*.json")), results_only)
    code = cli_report.main([str(results_only), "--extractor", "official", "--out", str(tmp_path)])
    assert code == 2 and "--log_samples" in capsys.readouterr().err


def test_report_names_the_newest_of_several_results_files_and_labels_override(
    runs, tmp_path, capsys
):
    run = tmp_path / "run"
    shutil.copytree(runs["reject"], run)
    newest = max(run.rglob("results_*.json"))
    older = newest.with_name("results_2000-01-01T00-00-00.000000.json")
    older.write_text(json.dumps({"results": {}, "config": {"model": "old"}}))
    code = cli_report.main([str(run), "--label", "mine", "--out", str(tmp_path / "r"), "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["rows"][0]["label"] == "mine"
    assert f"newest of 2 results files: {newest.name}" in payload["sources"][0]


def test_report_bad_inputs_exit_2_with_one_line_reason(tmp_path, capsys):
    assert cli_report.main([str(tmp_path / "nope"), "--out", str(tmp_path / "report")]) == 2
    assert capsys.readouterr().err.strip().endswith("no such file or directory")
    (tmp_path / "empty").mkdir()
    assert cli_report.main([str(tmp_path / "empty"), "--out", str(tmp_path / "report")]) == 2
    assert "no lm-eval results (results_*.json)" in capsys.readouterr().err
    bad = tmp_path / "results_2020-01-01T00-00-00.json"
    bad.write_text("{not json")
    assert cli_report.main([str(bad), "--out", str(tmp_path / "report")]) == 2
    assert "malformed JSON" in capsys.readouterr().err


def test_report_without_matplotlib_imports_and_names_the_plot_extra(runs, tmp_path):
    script = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from aqua_tasks.cli import report as cli_report\n"
        f"sys.exit(cli_report.main([{str(runs['reject'])!r}, '--out', {str(tmp_path)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "aqua report: error: the PNG chart needs matplotlib: "
        "pip install 'aqua-bench-eval[plot]' (or pass --no-chart)"
    )
    assert (tmp_path / "table.md").is_file() and not (tmp_path / "chart.png").exists()


def test_orca_calibration_joins_predictions_with_rated_items(tmp_path, capsys):
    from orca_fixtures import synthetic_items, write_jsonl

    from orca_judge.metrics import agreement

    items = synthetic_items(12, 3, "c")
    preds = [
        {
            "id": it["id"],
            "expected_unit": (sum(it["ratings"]) / len(it["ratings"]) - 1) / 4 * 0.8,
            "variance_unit": 0.01,
        }
        for it in items
    ]
    write_jsonl(tmp_path / "items.jsonl", items)
    write_jsonl(tmp_path / "pred.jsonl", preds)
    code = cli_report.main(
        [
            *("--orca-predictions", str(tmp_path / "pred.jsonl")),
            *("--orca-items", str(tmp_path / "items.jsonl")),
            *("--out", str(tmp_path / "o"), "--json"),
        ]
    )
    assert code == 0
    figures = json.loads(capsys.readouterr().out)["orca"]["agreement"]
    human = [(sum(it["ratings"]) / len(it["ratings"]) - 1) / 4 for it in items]
    assert figures["rho"] == pytest.approx(1.0)
    assert figures["mae_mu"] == pytest.approx(
        agreement([p["expected_unit"] for p in preds], human)["mae_mu"]
    )
    assert (tmp_path / "o" / "orca_calibration.png").read_bytes()[:4] == b"\x89PNG"
    assert "rho = 1.000" in (tmp_path / "o" / "orca_calibration.md").read_text()


# --- aqua regress ------------------------------------------------------------------------


def test_regress_detects_injected_solvable_regression_with_exit_1(runs, capsys, tmp_path):
    summary = tmp_path / "summary.md"
    code, out, err = regress(
        capsys,
        *("--baseline", str(runs["base"]), "--candidate", str(runs["regressed"])),
        *("--summary", str(summary), "--json"),
    )
    assert code == 1, err
    rows = {c["metric"]: c for c in json.loads(out)["comparisons"]}
    ori = rows["acc"]
    assert ori["baseline"] == pytest.approx(0.75) and ori["candidate"] == pytest.approx(0.25)
    assert (ori["lost"], ori["gained"]) == (60, 0)
    assert ori["p_value"] == pytest.approx(2 * 0.5**60) and ori["regression"] is True
    candidate = lm_eval_metrics(runs["regressed"])["aqua_animal"]
    for metric, row in rows.items():
        value = candidate[metric]
        assert row["candidate"] == (None if math.isnan(value) else pytest.approx(value))
    assert rows["unparsed_rate"]["regression"] is False
    text = summary.read_text()
    assert text.startswith("## AQUA-Bench regression check: ❌ regression")
    assert "| aqua_animal | Ori (acc) | 75.0 | 25.0 | -50.0 | 120 | McNemar −60/+0 |" in text
    assert "aqua regress: REGRESSION" in err


def test_regress_passes_a_run_against_itself_and_noise_below_threshold(runs, capsys):
    code, out, err = regress(
        capsys, "--baseline", str(runs["base"]), "--candidate", str(runs["base"])
    )
    assert code == 0, err
    assert "✅ no regression" in out and "aqua regress: no regression (8 comparisons" in out
    code, out, _ = regress(
        capsys, "--baseline", str(runs["base"]), "--candidate", str(runs["noisy"]), "--json"
    )
    assert code == 0
    first = json.loads(out)
    acc = next(c for c in first["comparisons"] if c["metric"] == "acc")
    assert (acc["lost"], acc["gained"]) == (2, 2) and acc["p_value"] == 1.0
    assert not any(c["regression"] for c in first["comparisons"])
    # Deterministic: the same inputs and seed give the same numbers.
    _, again, _ = regress(
        capsys, "--baseline", str(runs["base"]), "--candidate", str(runs["noisy"]), "--json"
    )
    assert json.loads(again) == first
    # Large drop threshold: even the injected regression passes.
    code, _, _ = regress(
        capsys,
        *("--baseline", str(runs["base"]), "--candidate", str(runs["regressed"])),
        *("--max-drop", "60"),
    )
    assert code == 0


def test_the_gate_tests_each_track_not_the_pooled_all_tracks_row(runs, capsys):
    # docs/ci.md: the gate compares per-track figures only; the pooled `aqua` row that the
    # results files of these two-track runs hold is derived from them and not tested again.
    assert "aqua" in json.loads(max(runs["reject"].rglob("results_*.json")).read_text())["results"]
    code, out, err = regress(
        capsys, "--baseline", str(runs["reject"]), "--candidate", str(runs["reject"]), "--json"
    )
    assert code == 0, err
    compared = {(c["task"], c["metric"]) for c in json.loads(out)["comparisons"]}
    assert {task for task, _ in compared} == {"aqua_animal", "aqua_vocal"}
    assert len(compared) == 2 * len(TESTED_METRICS)


def _edit_samples(run: Path, dest: Path, edit) -> Path:
    shutil.copytree(run, dest)
    for path in dest.rglob("samples_*.jsonl"):
        samples = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(edit(s)) + "\n" for s in samples))
    return dest


def test_regress_refuses_incomparable_runs_with_exit_2_and_the_reason(runs, capsys, tmp_path):
    code, _, err = regress(
        capsys, "--baseline", str(runs["base"]), "--candidate", str(runs["reject"])
    )
    assert code == 2
    assert err.strip() == (
        "aqua regress: not comparable: different tasks (baseline: aqua_animal; "
        "candidate: aqua_animal, aqua_vocal)"
    )

    def official(sample: dict) -> dict:
        sample["doc"]["extractor"] = "official"
        return sample

    other = _edit_samples(runs["base"], tmp_path / "official", official)
    code, _, err = regress(capsys, "--baseline", str(runs["base"]), "--candidate", str(other))
    assert (
        code == 2
        and "aqua_animal: extractor differs (baseline aqua-rules; candidate official)" in err
    )

    def chat(sample: dict) -> dict:
        sample["prompt_hash"] = "0" * 64
        return sample

    other = _edit_samples(runs["base"], tmp_path / "chat", chat)
    code, _, err = regress(capsys, "--baseline", str(runs["base"]), "--candidate", str(other))
    assert code == 2 and "aqua_animal: prompt differs (lm-eval prompt_hash; 480 items" in err


def _recorded_manifest(run: Path, task: str = "aqua_animal") -> dict:
    results = json.loads(max(run.rglob("results_*.json")).read_text())
    return results["configs"][task]["metadata"]["aqua_manifest"]


def _edit_manifest(run: Path, dest: Path, field: str, value: str) -> Path:
    shutil.copytree(run, dest)
    for path in dest.rglob("results_*.json"):
        results = json.loads(path.read_text())
        results["configs"]["aqua_animal"]["metadata"]["aqua_manifest"][field] = value
        path.write_text(json.dumps(results))
    return dest


def test_a_run_records_its_manifest_once_and_each_item_reads_it_from_the_results(runs, tmp_path):
    manifest = _recorded_manifest(runs["base"])
    assert set(manifest) == set(MANIFEST_FIELDS) and len(manifest["data_sha256"]) == 64
    (samples,) = runs["base"].rglob("samples_aqua_animal_*.jsonl")
    docs = [json.loads(line)["doc"] for line in samples.read_text().splitlines()]
    assert {k for d in docs for k in d} & set(MANIFEST_FIELDS) == set(DOC_FIELDS)
    items = read_run(runs["base"]).aqua_items
    assert len(items) == LIMIT and all(i.manifest == manifest for i in items)
    # Given alone, a samples file reads its results file beside it, like its folder does.
    assert read_run(samples).aqua_items == items
    # Without it, it says which fields it cannot know rather than guessing them.
    shutil.copy(samples, tmp_path / samples.name)
    alone = read_run(tmp_path / samples.name).aqua_items
    unknown = set(MANIFEST_FIELDS) - set(DOC_FIELDS)
    for item in alone:
        assert {k for k, v in item.manifest.items() if v is None} == unknown
        assert {k: item.manifest[k] for k in DOC_FIELDS} == {k: manifest[k] for k in DOC_FIELDS}


def test_a_samples_file_read_alone_scores_to_the_runs_metrics(runs, tmp_path):
    (samples,) = runs["base"].rglob("samples_aqua_animal_*.jsonl")
    alone = tmp_path / samples.name
    shutil.copy(samples, alone)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert aqua_score([str(alone), "--json"]) == 0
    scored = json.loads(out.getvalue())["results"]["aqua_animal"]
    for metric, value in lm_eval_metrics(runs["base"])["aqua_animal"].items():
        assert scored[metric] == (None if math.isnan(value) else pytest.approx(value)), metric


@pytest.mark.parametrize("field", ["data_sha256", "prompt_sha256"])
def test_regress_refuses_runs_whose_recorded_manifest_differs(runs, capsys, tmp_path, field):
    # The docs of these runs no longer carry data_sha256 or prompt_sha256: the gate must
    # read them from each run's results file.
    other = _edit_manifest(runs["base"], tmp_path / field, field, "changed")
    code, _, err = regress(capsys, "--baseline", str(runs["base"]), "--candidate", str(other))
    recorded = _recorded_manifest(runs["base"])[field]
    assert code == 2, err
    assert f"aqua_animal: {field} differs (baseline {recorded}; candidate changed)" in err


def test_regress_rescores_rather_than_refuses_a_run_with_another_extractor_version(
    runs, capsys, tmp_path
):
    # Both runs are re-scored by the current extractor, so the version recorded is no reason
    # to refuse (issue: an older baseline must stay usable); the notice says what happened.
    other = _edit_manifest(runs["base"], tmp_path / "version", "extractor_version", "1.0")
    code, _, err = regress(capsys, "--baseline", str(other), "--candidate", str(runs["base"]))
    assert code == 0, err
    current = EXTRACTOR_VERSIONS["aqua-rules"]
    assert f"recorded extractor 'aqua-rules' 1.0 re-scored with 'aqua-rules' {current}" in err


def _other_data(sample: dict) -> dict:
    sample["doc"]["data_sha256"] = "0" * 64
    return sample


def test_regress_compares_a_run_with_the_same_run_in_the_0_1_0_layout(runs, capsys, tmp_path):
    manifest = _recorded_manifest(runs["base"])

    def as_0_1_0(sample: dict) -> dict:
        doc = {k: v for k, v in sample["doc"].items() if k != "clip_index"}
        sample["doc"] = doc | manifest | {"exclude_defective": doc["exclude_defective"]}
        value = as_outcome(sample["acc"])._asdict() | {"clip": doc["audio_filename"]}
        return sample | {key: {"id": doc["id"], **value} for key in sample["metrics"]}

    old = _edit_samples(runs["base"], tmp_path / "old", as_0_1_0)
    code, _, err = regress(capsys, "--baseline", str(old), "--candidate", str(runs["base"]))
    assert code == 0, err
    # A 0.1.0 doc's own manifest is what that run used, whatever the results file says.
    changed = _edit_samples(old, tmp_path / "old-changed", _other_data)
    code, _, err = regress(capsys, "--baseline", str(changed), "--candidate", str(runs["base"]))
    assert code == 2 and "aqua_animal: data_sha256 differs" in err


def test_regress_missing_or_malformed_runs_exit_2_with_one_line_error(runs, capsys, tmp_path):
    code, _, err = regress(capsys, "--baseline", str(tmp_path / "nope"), "--candidate", ".")
    assert code == 2 and err.count("\n") == 1 and "no such file or directory" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "samples_aqua_animal_2026-01-01T00-00-00.jsonl").write_text("{oops\n")
    code, _, err = regress(capsys, "--baseline", str(runs["base"]), "--candidate", str(broken))
    assert code == 2 and ":1:2: malformed JSON" in err


# --- pure statistics ---------------------------------------------------------------------


def test_mcnemar_exact_p_matches_hand_computed_binomial_tails():
    assert mcnemar_exact_p(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact_p(1, 4) == pytest.approx(12 / 32)  # 2 * P(X <= 1), X ~ Bin(5, 1/2)
    assert mcnemar_exact_p(4, 1) == mcnemar_exact_p(1, 4)
    assert mcnemar_exact_p(3, 3) == 1.0 and mcnemar_exact_p(0, 0) == 1.0
    assert discordant_pairs([1, 1, 0, 0, 1], [0, 1, 1, 0, 0]) == (2, 1)
    with pytest.raises(ValueError, match="paired item by item"):
        discordant_pairs([1, 0], [1])


def test_holm_adjusts_in_step_down_order_and_keeps_input_order():
    adjusted = holm([0.01, 0.04, 0.03, math.nan])
    # Sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 1*0.04).
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adjusted[3])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([1.5])


def test_paired_bootstrap_ca_is_seeded_and_centred_on_the_observed_delta():
    solvable = [True] * 30 + [False] * 10
    base_var = [True] * 20 + [False] * 20
    cand_var = [True] * 5 + [False] * 35
    assert conditional_accuracy(solvable, base_var) == pytest.approx(20 / 30)
    result = paired_bootstrap_ca(solvable, base_var, solvable, cand_var, n_boot=1000, seed=3)
    assert result.delta == pytest.approx(5 / 30 - 20 / 30)
    assert result.ci_low < result.delta < result.ci_high < 0 and result.p_value < 0.01
    assert result == paired_bootstrap_ca(
        solvable, base_var, solvable, cand_var, n_boot=1000, seed=3
    )
    same = paired_bootstrap_ca(solvable, base_var, solvable, base_var, n_boot=200, seed=0)
    assert same.delta == 0.0 and same.p_value == 1.0
    assert math.isnan(paired_bootstrap_ca([False], [True], [False], [True]).p_value)
