"""The append-only JSON-lines store behind both reply caches."""

import json
import threading

from aqua_tasks.models.reply_journal import ReplyJournal
from eval_common.durable_jsonl import DurableAppender, cache_root, read_records
from eval_common.reply_cache import ReplyCache


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AQUA_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root("api-replies") == tmp_path / "c" / "api-replies"
    monkeypatch.delenv("AQUA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root("audiolm-replies") == tmp_path / "x" / "aqua-bench-eval" / "audiolm-replies"


def test_concurrent_appends_never_interleave_and_all_arrive(tmp_path):
    appender = DurableAppender(tmp_path / "sub" / "r.jsonl")
    long_text = "x" * 20000  # far beyond one pipe buffer: a mixed write would show

    def write(worker):
        for i in range(25):
            appender.append([{"key": f"{worker}-{i}", "reply": long_text}])

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records, torn = read_records(tmp_path / "sub" / "r.jsonl")
    assert torn == 0 and len(records) == 200
    assert {r["key"] for r in records} == {f"{w}-{i}" for w in range(8) for i in range(25)}


def test_a_torn_line_is_counted_and_the_next_append_starts_a_fresh_line(tmp_path):
    path = tmp_path / "r.jsonl"
    DurableAppender(path).append([{"key": "a", "reply": "1"}])
    with path.open("a") as handle:
        handle.write('{"key": "b", "rep')  # a kill in the middle of a write
    DurableAppender(path).append([{"key": "c", "reply": "3"}, {"no key": True}])
    records, torn = read_records(path)
    assert [r["key"] for r in records] == ["a", "c"] and torn == 2
    assert json.loads(path.read_text().splitlines()[-2]) == {"key": "c", "reply": "3"}


def test_both_reply_stores_write_the_same_line_format(tmp_path):
    cache = ReplyCache(tmp_path / "api.jsonl")
    cache.put("k1", {"model": "m", "reply": "yes"})
    journal = ReplyJournal(tmp_path / "local", {"model": "m"})
    journal.put([("k2", "no")])
    api_records, _ = read_records(tmp_path / "api.jsonl")
    local_records, _ = read_records(journal.path)
    assert api_records == [{"key": "k1", "model": "m", "reply": "yes"}]
    assert local_records == [{"key": "k2", "reply": "no"}]
    assert ReplyJournal(tmp_path / "local", {"model": "m"}).get("k2") == "no"
    assert ReplyCache(tmp_path / "api.jsonl").get("k1")["reply"] == "yes"


def test_a_journal_line_whose_reply_is_not_text_is_never_a_reply(tmp_path):
    journal = ReplyJournal(tmp_path / "local", {"model": "m"})
    journal.put([("k1", "yes"), ("k2", "no")])
    lines = journal.path.read_text().splitlines()
    edited = [lines[0], json.dumps({"key": "k2", "reply": 7})]
    journal.path.write_text("\n".join(edited) + "\n")
    again = ReplyJournal(tmp_path / "local", {"model": "m"})
    assert again.get("k1") == "yes" and again.get("k2") is None and again.torn == 1


def test_an_unwritable_journal_or_cache_folder_is_one_line_before_any_work(tmp_path):
    import pytest

    from eval_common.errors import OutputError

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(OutputError, match="cannot write the reply journal there"):
        ReplyJournal(a_file, {"model": "m"})
    with pytest.raises(OutputError, match=f"{a_file}/api.jsonl: cannot write the reply cache"):
        ReplyCache(a_file / "api.jsonl")
