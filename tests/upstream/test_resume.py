"""A second launch with the same output_dir resumes from the first's checkpoint folder,
in each format: the script runs twice in the stub harness, the first run's trainer "saves"
where upstream's trainer saves, and the second run's trainer call is checked by upstream's
own config loader or option table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from dflash_plan.model.launch import generate
from dflash_plan.model.launch.common import output_dir, run_id
from launch_shapes import shapes
from support import edit
from test_upstream import check_flags, node_calls, sky_nodes, sky_tasks, specforge_plan


def trainer_calls(calls: list[dict]) -> list[dict]:
    """The SpecForge calls that train (not the producer)."""
    out = []
    for call in calls:
        argv = call["argv"]
        role = argv[argv.index("--role") + 1] if "--role" in argv else "auto"
        if call["cmd"] == "specforge" and role != "producer":
            out.append(call)
    return out


def save_specforge_checkpoint(folder: Path, run: str, step: int) -> Path:
    """What specforge 0.2.0's CheckpointManager.save leaves: <run>-step<N>/ with its state
    file, and <run>-latest pointing at it."""
    ckpt = folder / f"{run}-step{step}"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "training_state.pt").touch()
    latest = folder / f"{run}-latest"
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(ckpt.name, target_is_directory=True)
    return ckpt


def kept(database: str, real):
    """os.path.exists, with the consumer's database there."""
    return lambda path: str(path) == database or real(path)


def resume_override(argv: list[str]) -> str | None:
    found = [a.split("=", 1)[1] for a in argv if a.startswith("training.resume_from=")]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize(
    ("fmt", "shape"),
    [
        ("specforge", "two-nodes-8+8"),
        ("specforge", "colocated"),
        ("slurm", "builtin"),
        ("slurm", "two-nodes-8+8"),
        ("kubernetes", "two-nodes-8+8"),
    ],
)
def test_a_second_specforge_launch_resumes_from_the_firsts_checkpoint(
    tmp_path, monkeypatch, catalog, baseline, specforge, fmt, shape
):
    if shape == "colocated":
        plan = edit(baseline, workload={"topology": "colocated"})
    else:
        plan = shapes(baseline)[shape]
    if fmt == "kubernetes":  # trainer pods share a volume for output_dir
        plan = edit(plan, launch={"volume_claim": "work"})
    script = generate(plan, catalog, fmt)
    run = run_id(plan)
    first = [c for _, calls in node_calls(tmp_path, script) for c in trainer_calls(calls)]
    assert first
    saved = set()
    for call in first:
        assert resume_override(call["argv"]) is None  # nothing to resume yet
        config = call["cwd"] / call["argv"][call["argv"].index("-c") + 1]
        overrides = [a for a in call["argv"] if "=" in a]
        doc = yaml.safe_load(config.read_text())
        assert doc["training"]["max_checkpoints"] >= 1 and doc["training"]["save_interval"] >= 1
        # The trainer saves under its output_dir (every node sees the same: shared).
        saved.add(save_specforge_checkpoint(call["cwd"] / doc["output_dir"], run, 500))
    second = [c for _, calls in node_calls(tmp_path, script) for c in trainer_calls(calls)]
    assert len(second) == len(first)
    for call in second:
        target = resume_override(call["argv"])
        assert target == output_dir(plan)
        # The run root resolves, as CheckpointManager.resolve_resume_dir does, through
        # its one complete -latest link to the first launch's checkpoint folder.
        root = call["cwd"] / target
        latest = Path(os.path.realpath(root / f"{run}-latest"))
        assert latest in {Path(os.path.realpath(s)) for s in saved}
        assert (latest / "training_state.pt").is_file()
        config = call["cwd"] / call["argv"][call["argv"].index("-c") + 1]
        if shape == "colocated":
            # 0.2.0 refuses online colocated runs (the script installs the commit that
            # has them): its TrainingConfig takes the override.
            doc = yaml.safe_load(config.read_text())["training"]
            doc = {k: v for k, v in doc.items() if k != "fsdp_sharding"}
            training = specforge.config.TrainingConfig.model_validate(
                {**doc, "resume_from": target}
            )
            assert training.resume_from == target
            continue
        overrides = [a for a in call["argv"] if "=" in a]
        # SpecForge's own loader and schema take the override (managed_local refuses it).
        cfg = specforge.config.load_config(str(config), overrides)
        assert cfg.training.resume_from == output_dir(plan)
        assert cfg.deployment.disaggregated.managed_local is None
        # And SpecForge's CLI plans the resumed run with it, given the consumer's metadata
        # database the first launch kept on its node (0.2.0 refuses a consumer resume
        # without it: the header warns): shown to exist, not written to the shared /tmp.
        database = f"{cfg.deployment.disaggregated.consumer_state_dir}/consumer.sqlite"
        with monkeypatch.context() as patch:
            patch.setattr(os.path, "exists", kept(database, os.path.exists))
            if specforge_plan(specforge, call, monkeypatch) is None:
                pytest.fail("a resumable launch planned as managed_local")


def warm_overrides(argv: list[str]) -> dict[str, str]:
    """The warm-start overrides of a one-node SpecForge call (the words after run.yaml)."""
    words = argv[argv.index("-c") + 2 :]
    assert all("=" in w for w in words)
    return dict(w.split("=", 1) for w in words)


def one_node_trainers(tmp_path, script, skypilot) -> list[dict]:
    if script.format == "skypilot":
        nodes = sky_nodes(tmp_path, sky_tasks(skypilot, script.text), "qwen3-8b-dflash")
    else:
        nodes = node_calls(tmp_path, script)
    calls = [c for _, node in nodes for c in trainer_calls(node)]
    assert len(calls) == 1
    return calls


@pytest.mark.parametrize("fmt", ["specforge", "skypilot"])
def test_a_second_managed_local_launch_warm_starts_from_the_newest_checkpoint(
    tmp_path, monkeypatch, catalog, baseline, specforge, skypilot, fmt
):
    script = generate(baseline, catalog, fmt)
    assert "cannot resume" in script.text  # the header says what a warm start loses
    for lost in ("AdamW moments", "learning-rate schedule", "data order"):
        assert lost in script.text
    run = run_id(baseline)
    # The run's optimizer steps, as SpecForge's online schedule counts them.
    w, d = baseline.workload, baseline.drafter
    total = w.samples * w.epochs // (d.count * d.batch_size)
    (first,) = one_node_trainers(tmp_path, script, skypilot)
    assert warm_overrides(first["argv"]) == {}  # a first launch starts from scratch
    config = first["cwd"] / first["argv"][first["argv"].index("-c") + 1]
    cfg = specforge.config.load_config(str(config), [])
    assert cfg.deployment.disaggregated.managed_local is not None
    out = first["cwd"] / cfg.output_dir
    save_specforge_checkpoint(out, run, 400)
    newest = save_specforge_checkpoint(out, run, 500)
    (out / f"{run}-step600").mkdir()  # a save that did not complete: no state file
    (second,) = one_node_trainers(tmp_path, script, skypilot)
    warm = warm_overrides(second["argv"])
    assert warm == {
        "model.draft_checkpoint_path": f"{cfg.output_dir}/{run}-step500",
        "training.max_steps": str(total - 500),
        "run_id": f"{run}-from500",
        "deployment.disaggregated.control_dir": f"{cfg.output_dir}/control-from500",
    }
    assert (second["cwd"] / warm["model.draft_checkpoint_path"]).resolve() == newest.resolve()
    # SpecForge's own loader takes the run.yaml with the warm start (its schema refuses
    # training.resume_from under managed_local, and both together).
    cfg = specforge.config.load_config(str(config), [f"{k}={v}" for k, v in warm.items()])
    assert cfg.deployment.disaggregated.managed_local is not None
    assert cfg.training.resume_from is None
    assert cfg.model.draft_checkpoint_path == warm["model.draft_checkpoint_path"]
    assert cfg.training.max_steps == total - 500
    # The warm start saves under its own run id, counting from 0: a third launch starts
    # from the checkpoint with the most steps of the run (500 + 300).
    save_specforge_checkpoint(out, f"{run}-from500", 300)
    (third,) = one_node_trainers(tmp_path, script, skypilot)
    warm = warm_overrides(third["argv"])
    assert warm["model.draft_checkpoint_path"] == f"{cfg.output_dir}/{run}-from500-step300"
    assert warm["training.max_steps"] == str(total - 800)
    assert warm["run_id"] == f"{run}-from800"
    # Once a checkpoint holds every step of the run, a launch trains nothing more.
    save_specforge_checkpoint(out, f"{run}-from800", total - 800)
    if fmt == "skypilot":
        nodes = sky_nodes(tmp_path, sky_tasks(skypilot, script.text), "qwen3-8b-dflash")
    else:
        nodes = node_calls(tmp_path, script)
    assert [c for _, node in nodes for c in trainer_calls(node)] == []


def test_a_second_speculators_launch_resumes_from_the_firsts_epoch_folder(
    tmp_path, catalog, baseline, speculators_options
):
    script = generate(baseline, catalog, "speculators")
    ready = f"{output_dir(baseline)}/data/dataset_info.json"

    def train_words() -> list[tuple[Path, list[str]]]:
        found = []
        for _, calls in node_calls(tmp_path, script, ready):
            for call in calls:
                if call["cmd"] == "torchrun":
                    argv = call["argv"]
                    words = argv[argv.index("speculators.train") + 1 :]
                    check_flags(words, speculators_options["train"], "speculators.train")
                    found.append((call["cwd"], words))
        assert found
        return found

    for cwd, words in train_words():
        save = cwd / words[words.index("--save-path") + 1]
        # speculators' BaseCheckpointer: <save_path>/<epoch>/ per epoch.
        (save / "0").mkdir(parents=True)
        (save / "0" / "model.safetensors").touch()
    for cwd, words in train_words():
        # It resumes by itself from the newest epoch folder of the same --save-path
        # (BaseCheckpointer._get_previous_epoch), unless told not to.
        assert "--no-resume-from-checkpoint" not in words
        save = cwd / words[words.index("--save-path") + 1]
        epochs = [int(d.name) for d in save.iterdir() if d.is_dir() and d.name.isdigit()]
        assert max(epochs) == 0
        freq = float(words[words.index("--checkpoint-freq") + 1])
        # Its schema: above 1, whole epochs only.
        assert 0 < freq <= 1 or freq.is_integer()


def test_a_second_legacy_launch_resumes_from_the_firsts_checkpoint_folder(
    tmp_path, catalog, baseline
):
    script = generate(baseline, catalog, "specforge-legacy")
    for attempt in range(2):
        for _, calls in node_calls(tmp_path, script):
            (call,) = [c for c in calls if c["cmd"] == "torchrun"]
            words = call["argv"][call["argv"].index("scripts/train_dflash.py") + 1 :]
            # --resume: train_dflash.py reloads get_last_checkpoint(output_dir), the newest
            # epoch_E_step_S folder, when output_dir exists (SpecForge 40d8feff).
            assert "--resume" in words
            out = call["cwd"] / words[words.index("--output-dir") + 1]
            assert int(words[words.index("--save-interval") + 1]) >= 1
            if attempt == 0:
                (out / "epoch_0_step_500").mkdir(parents=True)
            else:
                assert [d.name for d in out.iterdir()] == ["epoch_0_step_500"]
