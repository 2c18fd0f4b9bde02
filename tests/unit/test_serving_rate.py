"""Break-even at a request rate (issue 33 item 2, serving.requests_per_s): the GPUs serving
the rate without the drafter come from the decode model at the regime's batch, with it
the same divided by the speedup; the GPUs freed repay the training."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.core import serving
from dflash_plan.model.core.cost import prices
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import plan_from_dict, plan_to_dict, plan_to_toml
from dflash_plan.model.physics.acceptance import break_even_hours
from dflash_plan.tui.cli import main
from support import edit


def at_rate(baseline, rate, **serving_fields):
    return edit(baseline, serving={"requests_per_s": rate, **serving_fields})


def test_the_fleet_serves_the_rate_and_the_freed_gpus_repay_the_training(catalog, baseline):
    p = project(at_rate(baseline, 1.0), catalog)
    a, f = p.acceptance, p.acceptance.fleet
    assert f is not None and f.batch == 1  # low batch: one request at a time
    assert f.output_tokens == serving.BENCHMARK_OUTPUT_TOKENS
    assert f.gpus_without == pytest.approx(1.0 * 2048 / f.tokens_per_s_per_gpu)
    assert f.gpus_with(a.speedup) == pytest.approx(f.gpus_without / a.speedup)
    assert a.serving_gpus_saved == pytest.approx(f.gpus_without - f.gpus_with(a.speedup))
    gpu = a.serving_gpu
    price = prices(p.plan, p.resolved.gpus, (gpu,), catalog.offers).per_hour(gpu)
    assert price is not None and p.job.cost is not None
    # The same payback as per count, with the fleet's (fractional) GPUs as the count.
    expected = float(break_even_hours(p.job.cost, a.speedup, f.gpus_without, price))  # type: ignore[arg-type]
    assert a.break_even_hours == pytest.approx(expected)
    assert a.break_even_range is not None
    assert a.break_even_range[0] < a.break_even_hours < a.break_even_range[1]
    low, high = a.serving_gpus_saved_range
    assert low < a.serving_gpus_saved < high
    # Twice the rate frees twice the GPUs: half the serving hours.
    twice = project(at_rate(baseline, 2.0), catalog).acceptance
    assert twice.break_even_hours == pytest.approx(a.break_even_hours / 2)


def test_per_count_the_freed_gpus_are_the_count_less_its_share(catalog, baseline):
    a = project(edit(baseline, serving={"count": 8}), catalog).acceptance
    assert a.fleet is None and a.serving_gpus == 8
    assert a.serving_gpus_saved == pytest.approx(8 * (1 - 1 / a.speedup))
    assert a.to_json()["requests_per_s"] is None


def test_a_high_batch_fleet_needs_fewer_gpus_than_one_request_at_a_time(catalog, baseline):
    # high-batch has no public speedup pair: the plan sets its engine factor.
    low = project(at_rate(baseline, 5.0, engine_factor=0.3), catalog).acceptance.fleet
    high = project(
        at_rate(baseline, 5.0, engine_factor=0.3, regime="high-batch"), catalog
    ).acceptance.fleet
    assert low is not None and high is not None
    assert high.batch > 1 and high.gpus_without < low.gpus_without / 5


def test_the_output_length_is_servings_else_the_regenerated_answers(catalog, baseline):
    own = project(at_rate(baseline, 1.0, output_tokens=500), catalog).acceptance.fleet
    assert own is not None and (own.output_tokens, own.output_source) == (
        500,
        "serving.output_tokens",
    )
    regen = edit(
        at_rate(baseline, 1.0),
        workload={"regenerate": True, "regenerate_output_tokens": 1000},
    )
    f = project(regen, catalog).acceptance.fleet
    assert f is not None and (f.output_tokens, f.input_tokens) == (1000, 2344 - 1000)
    assert f.output_source == "workload.regenerate_output_tokens"
    # A longer answer takes a replica longer: more GPUs for the same rate.
    assert f.gpus_without > own.gpus_without


def test_the_batch_one_decode_holds_the_benchmarks_measured_rate(catalog, baseline):
    # TorchSpec's target-only Qwen3-8B on one H100 SXM under SGLang at concurrency 1:
    # 142.4 tok/s end to end (gsm8k; 2026-03-27). The fleet's range holds it.
    f = project(at_rate(baseline, 1.0, gpu="h100-sxm"), catalog).acceptance.fleet
    assert f is not None
    slow, fast = f.tokens_per_s_range
    assert slow < 142.4 < fast


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"count": 2, "requests_per_s": 1}, "serving.count = 2 and serving.requests_per_s = 1"),
        ({"requests_per_s": -1}, "serving.requests_per_s = -1: must be a number from 0.001"),
        ({"requests_per_s": 0}, "serving.requests_per_s = 0: must be a number from 0.001"),
        ({"output_tokens": 100}, "serving.output_tokens is read only with serving.requests"),
        ({"requests_per_s": 1, "output_tokens": 0}, "serving.output_tokens = 0: must be"),
    ],
)
def test_a_bad_serving_rate_is_one_line(baseline, fields, said):
    doc = plan_to_dict(baseline)
    doc["serving"] = fields
    with pytest.raises(PlanError) as caught:
        plan_from_dict(doc, "plan.toml")
    text = str(caught.value)
    assert said in text and "\n" not in text, text


def test_an_engine_without_a_decode_model_is_refused_in_one_line(catalog, baseline):
    plan = at_rate(baseline, 1.0, engine="transformers", engine_factor=0.6)
    with pytest.raises(PlanError) as caught:
        project(plan, catalog)
    assert str(caught.value).startswith("serving.engine = transformers: the decode model")


def test_a_plan_at_a_rate_saves_and_loads_as_it_was(baseline):
    plan = at_rate(baseline, 2.5, output_tokens=700)
    text = plan_to_toml(plan)
    assert "requests_per_s = 2.5" in text and "count" not in text.split("[serving]")[1]
    import tomllib

    assert plan_from_dict(tomllib.loads(text), "plan.toml").serving == plan.serving


def test_project_says_the_rate_in_text_and_json(capsys):
    assert main(["project", "--set", "serving.requests_per_s=1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "serving hours at 1 request/s (2,048 output tokens each): " in text
    assert " without the drafter, " in text and " saved" in text
    assert main(["project", "--json", "--set", "serving.requests_per_s=1"]) == 0
    a = json.loads(capsys.readouterr().out)["acceptance"]
    assert a["requests_per_s"] == 1 and a["fleet"]["output_tokens"] == 2048
    assert a["serving_gpus_saved"] < a["fleet"]["gpus_without_drafter"]


def test_the_limits_doc_states_the_rates_bound():
    # The bound lives in inputs/plan.py (not basics/validation.py's ALL_BOUNDS, an input
    # of the shipped fit): docs/limits.md states it all the same.
    from pathlib import Path

    from dflash_plan.model.inputs.plan import REQUESTS_PER_S

    text = (Path(__file__).parents[2] / "docs" / "limits.md").read_text()
    assert f"| `serving.requests_per_s` | {REQUESTS_PER_S.describe()} |" in text
