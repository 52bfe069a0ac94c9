"""``deploy --out`` swaps the bundle in as a whole (issue 36: a full disk used to leave a new
launch.sh beside the earlier bundle's Compose and Kubernetes files)."""

from __future__ import annotations

import os

import pytest

from advisor.catalog import files

TRT = ["deploy", "--deployment", "h100-sxm.tp4.pp1.dp2.fp8.fp8", "--engine", "trtllm"]
VLLM = ["deploy", "--deployment", "h100-sxm.tp4.pp1.dp2.fp8.fp8", "--engine", "vllm"]


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_failed_write_keeps_the_earlier_bundle_whole(tmp_path, run_cli, monkeypatch):
    out = tmp_path / "d"
    out.mkdir()
    assert run_cli([*TRT, "--out", str(out)])[0] == 0
    before = _snapshot(out)
    assert "extra-llm-api-options.yaml" in before  # TensorRT-LLM's own file
    real_fdopen, calls = os.fdopen, []

    def disk_full_on_third_file(fd, *a, **k):  # ENOSPC part-way through the new set
        calls.append(fd)
        if len(calls) == 3:
            os.close(fd)
            raise OSError(28, "No space left on device")
        return real_fdopen(fd, *a, **k)

    monkeypatch.setattr(files.os, "fdopen", disk_full_on_third_file)
    code, stdout, err = run_cli([*VLLM, "--out", str(out)])
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert "--out" in err and "No space left on device" in err and "unchanged" in err
    assert _snapshot(out) == before  # the old set, every byte; no new launch.sh beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no staging folder left


def test_a_new_bundle_replaces_an_earlier_one_of_another_engine(tmp_path, run_cli):
    out = tmp_path / "d"
    out.mkdir()
    os.chmod(out, 0o750)
    assert run_cli([*TRT, "--out", str(out)])[0] == 0
    os.chmod(out / "launch.sh", 0o755)  # the user made it executable: kept
    code, stdout, err = run_cli([*VLLM, "--out", str(out)])
    assert code == 0, err
    names = {p.name for p in out.iterdir()}
    assert names == {"launch.sh", "docker-compose.yaml", "kubernetes.yaml", "README.md"}
    assert "vllm serve" in (out / "launch.sh").read_text()  # TensorRT-LLM's options file gone
    assert (out / "launch.sh").stat().st_mode & 0o777 == 0o755
    assert out.stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_a_folder_with_other_files_is_refused_before_any_work(tmp_path, run_cli):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "sub").mkdir()
    code, stdout, err = run_cli([*VLLM, "--out", str(tmp_path)])
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert "'notes.txt', 'sub'" in err and "replaced as a whole" in err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_link_to_the_folder_keeps_pointing_at_the_new_bundle(tmp_path, run_cli):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert run_cli([*VLLM, "--out", str(tmp_path / "link")])[0] == 0
    assert (tmp_path / "link").is_symlink() and (real / "launch.sh").is_file()


def test_replace_folder_puts_the_old_folder_back_when_the_swap_fails(tmp_path, monkeypatch):
    out = tmp_path / "d"
    out.mkdir()
    (out / "a.txt").write_text("old")
    real_replace = os.replace

    def fail_second(src, dst):
        if str(src).rsplit("/", 1)[-1].startswith(".d.new-"):
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", fail_second)
    with pytest.raises(files.FileWriteError, match="unchanged"):
        files.replace_folder(out, {"a.txt": b"new"}, lambda name: True)
    assert _snapshot(out) == {"a.txt": b"old"} and sorted(os.listdir(tmp_path)) == ["d"]
