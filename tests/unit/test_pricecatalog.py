"""`prices --import`: real catalog rows (tests/data/catalogs/README.md names each file's
repository, path and commit) into the user's offers.toml, GPU names normalised, prices
per GPU-hour, dated, sourced; re-imports replace their own rows only."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.offers import load_offer_file
from dflash_plan.model.inputs.pricecatalog import GPU_NAMES, gpu_key, read_catalog
from dflash_plan.model.physics.fitting import builtin_gpus

CATALOGS = Path(__file__).parents[1] / "data" / "catalogs"
VERDA = CATALOGS / "verda" / "vms.csv"
SKYPILOT_FILES = sorted(CATALOGS.glob("*/vms.csv"))
GPUHUNT_VERDA = CATALOGS / "gpuhunt" / "verda.csv"

# Every GPU spelling the test catalogs hold, and the provider spellings gpuhunt's provider
# code maps (github.com/dstackai/gpuhunt src/gpuhunt/providers/*.py @ 35841515): name,
# per-GPU memory (gpuhunt's gpu_memory; None where the format has none), instance, key.
SPELLINGS = [
    # RTX PRO 6000, six ways
    ("RTX-PRO-6000", None, "1RTXPRO6000.30V", "rtx-pro-6000"),  # SkyPilot verda
    ("RTXPRO6000", 96.0, "1RTXPRO6000.30V", "rtx-pro-6000"),  # gpuhunt's own name
    ("RTX PRO 6000", None, "", "rtx-pro-6000"),  # cloudrift.py, jarvislabs.py
    ("RTX-PRO6000", None, "", "rtx-pro-6000"),  # jarvislabs.py
    ("RTX PRO Server 6000", None, "", "rtx-pro-6000"),  # aws.py
    ("RTX PRO 6000 96GB", None, "", "rtx-pro-6000"),  # verda.py (Verda's API)
    ("B200", None, "gpu_8x_b200_sxm6", "b200"),
    ("B200", 180.0, "1B200.30V", "b200"),
    ("B300", None, "1B300.30V", "b300"),
    ("H200", None, "gpu-h200-sxm_1gpu-16vcpu-200gb", "h200"),
    # H100: the form is in the name or the instance
    ("H100", None, "gpu_8x_h100_sxm5", "h100-sxm"),  # lambda
    ("H100", None, "1H100.80S.30V", "h100-sxm"),  # verda (80 GB SXM5)
    ("H100", None, "gpu-h100-sxm_1gpu-16vcpu-200gb", "h100-sxm"),  # nebius
    ("H100", None, "gpu_1x_h100_pcie", "h100-pcie"),  # lambda's PCIe instance
    ("H100", 80.0, "1H100.80S.30V", "h100-sxm"),  # gpuhunt
    ("H100-80G-SXM5", None, "n3-H100-SXM5x8", "h100-sxm"),  # hyperstack
    ("H100-80G-PCIe", None, "n3-H100x1", "h100-pcie"),
    ("H100-80G-PCIe-NVLink", None, "n3-H100x8-NVLink", "h100-pcie"),
    # A100: 80 GB only in the catalog; the memory is in the name or gpuhunt's gpu_memory
    ("A100-80GB", None, "1A100.22V", "a100-80g"),  # verda, runpod
    ("A100-80GB-160GB", None, "2A100.44V", "a100-80g"),  # verda: total memory appended
    ("A100-80GB-320GB", None, "4A100.88V", "a100-80g"),
    ("A100-80GB-640GB", None, "8A100.176V", "a100-80g"),
    ("A100-80G-PCIe", None, "n3-A100x1", "a100-80g"),  # hyperstack
    ("A100-80G-PCIe-NVLink", None, "n3-A100x8-NVLink", "a100-80g"),
    ("A100", 80.0, "1A100.22V", "a100-80g"),  # gpuhunt
    ("A100", 40.0, "1A100.40S.22V", None),  # gpuhunt, 40 GB
    ("A100", None, "gpu_8x_a100", None),  # lambda: the 40 GB card
    ("A100-40GB", None, "1A100.40S.22V", None),
    ("A100-40GB-320GB", None, "8A100.40S.176V", None),
    ("L40S", None, "1L40S.20V", "l40s"),
    # GPUs the catalog does not hold
    ("L40", None, "n3-L40x1", None),
    ("Tesla-V100", None, "1V100.6V", None),
    ("V100", None, "gpu_8x_v100", None),
    ("RTX-6000-Ada", None, "1RTX6000ADA.10V", None),
    ("RTX-A6000", None, "1A6000.10V", None),
    ("A6000", None, "gpu_1x_a6000", None),
    ("RTX-A4000", None, "n3-RTX-A4000x1", None),
    ("GH200", None, "gpu_1x_gh200", None),
]


@pytest.mark.parametrize(("name", "memory", "instance", "key"), SPELLINGS)
def test_every_spelling_maps_onto_the_catalogs_key(name, memory, instance, key):
    assert gpu_key(name, memory, instance) == key


def test_the_table_covers_every_gpu_name_in_the_test_catalogs():
    """A spelling in the data that the table above does not test fails here: a new
    excerpt brings its spellings into the test."""
    tested = {s[0] for s in SPELLINGS}
    seen = set()
    for path in SKYPILOT_FILES:
        with path.open(newline="") as f:
            seen |= {r["AcceleratorName"] for r in csv.DictReader(f) if r["AcceleratorName"]}
    with GPUHUNT_VERDA.open(newline="") as f:
        seen |= {r["gpu_name"] for r in csv.DictReader(f) if r["gpu_name"]}
    assert seen - tested == set()
    # every key the table maps onto is a GPU of the catalog
    assert set(GPU_NAMES.values()) <= set(builtin_gpus())


def _rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The file's data rows with their line numbers (each row is one line here)."""
    with path.open(newline="") as f:
        return list(enumerate(csv.DictReader(f), start=2))


def test_each_offer_is_its_rows_price_divided_by_its_gpus():
    got = read_catalog(VERDA, VERDA.read_text(), date="2026-11-30", source="538675a")
    assert (got.format, got.provider, got.rows) == ("skypilot", "verda", 45)
    # 30 rows of catalog GPUs, 26 of them with a spot price; 15 rows skipped by name
    assert len(got.offers) == 30 + 26
    assert got.skipped == 15 and got.without_gpu == 0
    assert dict(got.unknown) == {
        "A100-40GB": 1,
        "A100-40GB-320GB": 1,
        "RTX-6000-Ada": 4,
        "RTX-A6000": 5,
        "Tesla-V100": 4,
    }
    assert "skipped 15 rows: 5 GPU types not in hardware.toml: A100-40GB (1)" in got.summary()
    by_line = dict(_rows(VERDA))
    for offer in got.offers:
        line = int(offer.notes.split("catalog row ")[1].split(")")[0])
        row = by_line[line]
        gpus = int(float(row["AcceleratorCount"]))
        column = "Price" if offer.kind == "on-demand" else "SpotPrice"
        assert offer.usd_per_gpu_hour == pytest.approx(float(row[column]) / gpus, abs=1e-6)
        assert offer.unit_gpus == gpus
        assert (offer.instance, offer.region) == (row["InstanceType"], row["Region"])
        assert offer.date == "2026-11-30"
        assert offer.source == "skypilot catalog verda/vms.csv @ 538675a"
        assert offer.imported == "skypilot:verda"
    # the 8-GPU B200 row: $30.32 for 8 GPUs, no spot price
    eight = [o for o in got.offers if o.instance == "8B200.240V"]
    assert [(o.kind, o.usd_per_gpu_hour) for o in eight] == [("on-demand", 30.32 / 8)]


def test_the_cheapest_b200_and_rtx_pro_6000_of_the_snapshots():
    offers = [
        o
        for path in SKYPILOT_FILES
        for o in read_catalog(path, path.read_text(), date="2026-11-30").offers
    ]

    def cheapest(gpu: str, kind: str) -> tuple[str, float, int]:
        o = min(
            (o for o in offers if o.gpu == gpu and o.kind == kind),
            key=lambda o: (o.usd_per_gpu_hour, o.unit_gpus),
        )
        return o.provider, round(o.usd_per_gpu_hour, 4), o.unit_gpus

    assert cheapest("b200", "on-demand") == ("verda", 3.79, 1)
    assert cheapest("b200", "spot") == ("verda", 0.9475, 4)  # 4B200.120V: $3.79 / 4
    assert cheapest("rtx-pro-6000", "on-demand") == ("verda", 1.39, 1)
    assert cheapest("rtx-pro-6000", "spot") == ("verda", 0.3475, 4)  # $1.39 / 4
    # Lambda's 8-GPU B200 node: $39.92 / 8; Nebius's: $44.00 / 8
    lambda_b200 = {
        o.unit_gpus: o.usd_per_gpu_hour
        for o in offers
        if o.provider == "lambda" and o.gpu == "b200"
    }
    assert lambda_b200[2] == pytest.approx(10.38 / 2)
    assert lambda_b200[8] == pytest.approx(39.92 / 8)
    nebius = [o for o in offers if o.provider == "nebius" and o.gpu == "b200"]
    assert [o.usd_per_gpu_hour for o in nebius] == [pytest.approx(44.00 / 8)]


def test_repeated_rows_and_rows_without_gpus_are_counted():
    runpod = CATALOGS / "runpod" / "vms.csv"
    got = read_catalog(runpod, runpod.read_text(), date="2026-11-30")
    # CA-MTL-1 and CA-MTL-2 are two zones of region CA at one price: one offer each kind
    assert (got.rows, len(got.offers), got.duplicates) == (5, 8, 2)
    nebius = CATALOGS / "nebius" / "vms.csv"
    got = read_catalog(nebius, nebius.read_text(), date="2026-11-30")
    assert got.without_gpu == 2 and "2 rows without a GPU" in got.summary()


def test_a_gpuhunt_file_names_its_provider_and_tells_spot_rows():
    got = read_catalog(GPUHUNT_VERDA, GPUHUNT_VERDA.read_text(), date=None, source="20261130-7")
    assert (got.format, got.provider, got.rows) == ("gpuhunt", "verda", 11)
    assert {o.date for o in got.offers} == {"2026-11-30"}  # from the gpuhunt version
    assert got.without_gpu == 1 and dict(got.unknown) == {"A100 40 GB": 1, "V100 16 GB": 1}
    kinds = {(o.instance, o.kind): o.usd_per_gpu_hour for o in got.offers}
    assert kinds[("1B200.30V", "spot")] == 0.95
    assert kinds[("8RTXPRO6000.240V", "on-demand")] == pytest.approx(11.12 / 8)
    assert {o.gpu for o in got.offers} == {"b200", "rtx-pro-6000", "a100-80g", "h100-sxm"}


def _import(main, path: Path, *extra: str) -> int:
    return main(["prices", "--import", str(path), *extra])


def test_a_reimport_replaces_its_own_rows_and_keeps_yours(tmp_path, monkeypatch, capsys):
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    mine = tmp_path / "offers.toml"
    hand = (
        "# my negotiated price\n"
        '[[offer]]\nprovider = "verda"\ngpu = "b200"\nusd_per_gpu_hour = 3.5\n'
        'unit_gpus = 8\ndate = "2026-11-02"\nsource = "quote by mail"\n'
    )
    mine.write_text(hand)
    assert _import(main, VERDA, "--date", "2026-11-30", "--source", "538675a") == 0
    out = capsys.readouterr().out
    assert "read 45 rows of verda/vms.csv (skypilot, verda); 56 offers" in out
    assert "56 offers of verda; 1 other offers kept" in out
    once = mine.read_text()
    assert once.startswith(hand)  # comment and hand-written offer untouched
    assert _import(main, VERDA, "--date", "2026-11-30", "--source", "538675a") == 0
    assert "replacing 56 from an earlier import" in capsys.readouterr().out
    assert mine.read_text() == once  # the same snapshot twice: the same file
    # a newer snapshot of the same catalog replaces the rows of the older one
    assert _import(main, VERDA, "--date", "2026-12-01") == 0
    offers = load_offer_file(mine, ())
    assert len(offers) == 57
    assert {o.date for o in offers if o.imported} == {"2026-12-01"}
    assert [o.source for o in offers if not o.imported] == ["quote by mail"]
    # another provider's catalog adds to the file
    assert _import(main, CATALOGS / "lambda" / "vms.csv", "--date", "2026-11-30") == 0
    assert "57 other offers kept" in capsys.readouterr().out


def test_a_reimport_into_a_file_of_imported_offers_only(tmp_path, monkeypatch, capsys):
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    assert _import(main, VERDA, "--date", "2026-11-30") == 0
    once = (tmp_path / "offers.toml").read_text()
    assert _import(main, VERDA, "--date", "2026-11-30") == 0
    assert (tmp_path / "offers.toml").read_text() == once
    assert "replacing 56 from an earlier import; 0 other offers kept" in capsys.readouterr().out


def test_search_uses_the_imported_offer_and_names_its_catalog(tmp_path, monkeypatch, capsys):
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["search", "--set", "cost.provider=verda", "--gpus", "rtx-pro-6000", "--max-gpus", "8"]
    assert main([*argv, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)["prices_not_from_plan"]
    assert [p["usd_per_gpu_hour"] for p in before] == [1.69]  # the shipped Verda offer
    assert _import(main, VERDA, "--date", "2026-11-30", "--source", "538675a") == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    (price,) = json.loads(capsys.readouterr().out)["prices_not_from_plan"]
    assert price["usd_per_gpu_hour"] == 1.39  # the 1-GPU row: $1.39 / 1
    assert price["offer"]["source"] == "skypilot catalog verda/vms.csv @ 538675a"
    assert price["offer"]["instance"] == "1RTXPRO6000.30V"
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "RTX PRO 6000 $1.39/GPU-h (verda on-demand offer, 2026-11-30, from the skypilot "
        "catalog verda/vms.csv @ 538675a" in out
    )


def _bad_copy(tmp_path: Path, line: int, column: str, value: str) -> Path:
    folder = tmp_path / "verda"
    folder.mkdir()
    path = folder / "vms.csv"
    with VERDA.open(newline="") as f:
        rows = list(csv.reader(f))
    rows[line - 1][rows[0].index(column)] = value
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


@pytest.mark.parametrize(
    ("column", "value", "allowed"),
    [
        ("Price", "", "must be a number"),
        ("Price", "n/a", "must be a number"),
        ("Price", "0", "must be a price above 0"),
        ("SpotPrice", "nan", "must be a number"),
        ("AcceleratorCount", "1.5", "must be a whole number of GPUs"),
        # the row's GPU is 1: $1,500 per GPU-hour, over an offer's $1,000; $1e-7 is 0 at
        # the 6 decimals an offer keeps (both were a pydantic traceback)
        (
            "Price",
            "1500",
            "$1500/h for 1 GPU is $1500 per GPU-hour; an offer's must be from $0.000001 "
            "to $1,000 per GPU-hour",
        ),
        (
            "SpotPrice",
            "0.0000001",
            "$1e-07/h for 1 GPU is $1e-07 per GPU-hour; an offer's must be from $0.000001",
        ),
    ],
)
def test_a_bad_row_is_one_line_naming_file_line_column_and_value(
    tmp_path, monkeypatch, capsys, column, value, allowed
):
    from dflash_plan.tui.cli import main

    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(config))
    path = _bad_copy(tmp_path, 6, column, value)  # line 6: 1B200.30V
    assert _import(main, path, "--date", "2026-11-30") == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:6: {column} = {value!r}: {allowed}" in err and "\n" not in err
    assert not (config / "offers.toml").exists()  # nothing written


def test_an_unknown_header_or_undated_rows_are_refused(tmp_path, monkeypatch, capsys):
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    other = tmp_path / "prices.csv"
    other.write_text("gpu,usd\nB200,3.79\n")
    assert _import(main, other, "--date", "2026-11-30") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"dflash-plan: {other}: not a price catalog this reads (columns: gpu, usd)"
    )
    assert "skypilot: InstanceType, AcceleratorName" in err and "gpuhunt: instance_name" in err
    assert _import(main, VERDA) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "skypilot rows carry no date; give --date YYYY-MM-DD (when the snapshot was taken)"
    )
    assert _import(main, VERDA, "--date", "30.11.2026") == 2
    assert "--date '30.11.2026': use YYYY-MM-DD" in capsys.readouterr().err
    assert not (tmp_path / "offers.toml").exists()


def test_a_bad_offers_file_is_not_overwritten(tmp_path, monkeypatch, capsys):
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    bad = '[[offer]]\nprovider = "x"\ngpu = "b200"\nusd_per_gpu_hour = -1\ndate = "2026-01"\n'
    (tmp_path / "offers.toml").write_text(bad)
    assert _import(main, VERDA, "--date", "2026-11-30") == 2
    assert "offer.0.usd_per_gpu_hour = -1" in capsys.readouterr().err
    assert (tmp_path / "offers.toml").read_text() == bad


def test_the_provider_comes_from_the_folder_or_the_option(tmp_path):
    copy = tmp_path / "Some Folder" / "vms.csv"
    copy.parent.mkdir()
    shutil.copy(VERDA, copy)
    with pytest.raises(PlanError, match=r"provider 'some folder' .* give --provider NAME"):
        read_catalog(copy, copy.read_text(), date="2026-11-30")
    got = read_catalog(copy, copy.read_text(), date="2026-11-30", provider="verda")
    assert got.provider == "verda"
    lambdalabs = read_catalog(
        GPUHUNT_VERDA, GPUHUNT_VERDA.read_text(), date="2026-11-30", provider="lambdalabs"
    )
    assert (
        lambdalabs.provider == "lambda"
    )  # gpuhunt's name for the provider offers.toml calls lambda


def test_a_source_of_2000_characters_is_one_line_naming_the_flag(tmp_path, monkeypatch, capsys):
    """An offer keeps its source in 2,000 characters, the catalog's name included: a long
    --source was a pydantic traceback on the first row."""
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    assert _import(main, VERDA, "--date", "2026-11-30", "--source", "x" * 2000) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dflash-plan: --source 'xxx") and "\n" not in err
    assert "must be at most 200 characters (got 2,000)" in err
    assert not (tmp_path / "offers.toml").exists()


@pytest.mark.parametrize("brk", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_line_break_inside_a_quoted_field_stays_in_the_field(tmp_path, brk):
    """Only CR and LF end a CSV row; str.splitlines also split on these, cutting the row
    in two: a truncated instance name and the row's offers lost without a word."""
    folder = tmp_path / "verda"
    folder.mkdir()
    path = folder / "vms.csv"
    with VERDA.open(newline="") as f:
        rows = list(csv.reader(f))
    instance = rows[0].index("InstanceType")
    rows[5][instance] = f"1B200{brk}30V"  # line 6: B200, $3.79 on demand, $0.95 spot
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    got = read_catalog(path, path.read_bytes().decode(), date="2026-11-30")
    want = read_catalog(VERDA, VERDA.read_text(), date="2026-11-30")
    assert (got.rows, len(got.offers), got.without_gpu) == (want.rows, len(want.offers), 0)
    mine = [(o.kind, o.usd_per_gpu_hour) for o in got.offers if o.instance == f"1B200{brk}30V"]
    assert mine == [("on-demand", 3.79), ("spot", 0.95)]
    # every offer still names its row's line (the break does not count as one)
    assert [o.notes for o in got.offers] == [o.notes for o in want.offers]


HAND_B = (
    "# my negotiated price, by mail 2026-11-02\n"
    '[[offer]]\nprovider = "verda"\ngpu = "b200"\nusd_per_gpu_hour = 3.5\n'
    'date = "2026-11-02"\n'
)


def test_a_reimport_keeps_the_comment_above_a_hand_written_offer(tmp_path, monkeypatch, capsys):
    """A comment sits after the keys of the table before it: it went with the imported
    offer before it, and the hand-written offer moved to the top of the file."""
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    runpod = CATALOGS / "runpod" / "vms.csv"
    mine = tmp_path / "offers.toml"
    assert _import(main, runpod, "--date", "2026-11-30") == 0
    # a comment above the imported offers, and a hand-written offer after them
    text = mine.read_text().replace("\n[[offer]]", "\n# runpod, imported\n[[offer]]", 1)
    mine.write_text(text + "\n" + HAND_B)
    before = mine.read_text()
    assert _import(main, runpod, "--date", "2026-11-30") == 0
    assert "replacing 8 from an earlier import; 1 other offers kept" in capsys.readouterr().out
    assert mine.read_text() == before  # the same snapshot again: not a byte moved
    assert _import(main, runpod, "--date", "2026-11-29") == 0
    after = mine.read_text()
    assert after.endswith("\n\n" + HAND_B)  # still last, its comment above it
    assert after.count("# runpod, imported\n[[offer]]\n") == 1  # above the new offers
    assert after.replace("2026-11-29", "2026-11-30") == before


def test_an_inline_array_of_offers_takes_an_import(tmp_path, monkeypatch, capsys):
    """`offer = [ {...} ]` is TOML's other spelling of [[offer]]: tables appended after it
    made the file invalid ('Cannot mutate immutable namespace')."""
    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    mine = tmp_path / "offers.toml"
    hand = (
        "# mine\noffer = [\n  # a quote by mail\n"
        '  { provider = "verda", gpu = "b200", usd_per_gpu_hour = 3.5, date = "2026-11-02" },\n'
    )
    mine.write_text(hand + "]\n")
    runpod = CATALOGS / "runpod" / "vms.csv"
    assert _import(main, runpod, "--date", "2026-11-30") == 0
    assert "8 offers of runpod; 1 other offers kept" in capsys.readouterr().out
    once = mine.read_text()
    assert once.startswith(hand)  # the comments and the hand-written offer as they were
    offers = load_offer_file(mine, ())
    assert [o.imported for o in offers] == [""] + ["skypilot:runpod"] * 8
    assert _import(main, runpod, "--date", "2026-11-30") == 0
    assert "replacing 8 from an earlier import" in capsys.readouterr().out
    assert mine.read_text() == once


def test_a_catalog_of_too_many_offers_is_refused_at_the_row_that_passes_the_limit(
    tmp_path, monkeypatch, capsys
):
    """100,000 rows took 88 s and 1 GB before the offers file's size refused them: now
    the rows after the limit are never read (a bad one there is never reached)."""
    from dflash_plan.model.basics.tomlfile import MAX_FILE_BYTES
    from dflash_plan.model.inputs import pricecatalog
    from dflash_plan.tui.cli import main

    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(config))
    # the limit: no offer is written in fewer bytes than MIN_OFFER_BYTES (the smallest in
    # the test catalogs is 275), so more than MAX_OFFERS cannot fit in an offers file
    assert pricecatalog.MAX_OFFERS * pricecatalog.MIN_OFFER_BYTES <= MAX_FILE_BYTES
    assert _import(main, VERDA, "--date", "2026-11-30") == 0
    capsys.readouterr()
    blocks = (config / "offers.toml").read_text().split("\n[[offer]]")[1:]
    assert min(len(("\n[[offer]]" + b).encode()) for b in blocks) > pricecatalog.MIN_OFFER_BYTES
    # a smaller limit, for a small file: lines 2-5 give 2 offers each (Price and SpotPrice)
    monkeypatch.setattr(pricecatalog, "MAX_OFFERS", 7)
    path = _bad_copy(tmp_path, 40, "Price", "n/a")
    assert _import(main, path, "--date", "2026-11-30") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dflash-plan: {path}:5: more than 7 offers by this row")


def test_a_future_date_is_refused_naming_it_and_today(tmp_path, monkeypatch, capsys):
    """A snapshot dated after today gave offers of a negative age, never "old"."""
    import datetime as dt

    from dflash_plan.tui.cli import main

    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    today = dt.date.today()
    tomorrow = (today + dt.timedelta(days=1)).isoformat()
    assert _import(main, VERDA, "--date", tomorrow) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"dflash-plan: --date {tomorrow}: after today ({today.isoformat()}); give the date "
        "the snapshot was taken"
    )
    assert not (tmp_path / "offers.toml").exists()
    # a gpuhunt version dates its rows: the same rule
    with pytest.raises(
        PlanError,
        match=r"--source 20261201-3: a gpuhunt version dated "
        r"2026-12-01, after today \(2026-11-30\)",
    ):
        read_catalog(
            GPUHUNT_VERDA,
            GPUHUNT_VERDA.read_text(),
            date=None,
            source="20261201-3",
            today=dt.date(2026, 11, 30),
        )
