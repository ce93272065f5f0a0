"""Capacity planning: offers, prices, budget, `prefer`, and the strategy options, each
code on a scenario whose answer is clear by a wide margin, each formula against
numbers derived by hand."""

from __future__ import annotations

import math

import pytest

import rung
from rung.errors import InputError
from rung.model import estimate
from rung.spec import catalog, parse_scenario
from tests.conftest import valid_scenario


def decide(data):
    return rung.advise(parse_scenario(data))


# The team: one A10G per host on 10 Gb/s, ResNet-50-sized model, 0.21 s steps of 64.
TEAM = {"workload": {"params": 25.6e6, "optimizer": "momentum", "per_device_batch": 64, "step_seconds": 0.21,
                     "activation_bytes_per_example": 1e8},
        "hardware": {"device": "A10G", "devices_per_host": 1, "intra_host": None, "inter_host_gbps": 10, "max_hosts": 16,
                     "usd_per_host_hour": 1.01},
        "goal": {"target_examples_per_second": 1500}}
BIG_BOX = {"name": "g5.48xlarge", "usd_per_host_hour": 16.29, "device": "A10G", "devices_per_host": 8,
           "inter_host_gbps": 100, "max_hosts": 2, "intra_host": "pcie"}


def scenario(**changes):
    data = valid_scenario(**{k: v for k, v in TEAM.items()})
    for k, v in changes.items():
        data[k] = v
    return data


def test_no_offers_is_the_team_hardware_alone():
    d = decide(scenario())
    j = d.to_json()
    assert j["option"] == "hardware" and [o["name"] for o in j["options"]] == ["hardware"]
    # one A10G: 64 / 0.21 = 305/s; 1500/s needs about 5-6 hosts at $1.01
    o = j["options"][0]
    assert o["verdict"] == "multi_worker_mirrored" and o["usd_per_hour"] == pytest.approx(1.01 * d.hosts)
    assert o["usd_per_million_examples"] == pytest.approx(o["usd_per_hour"] / (o["examples_per_second"] * 3600) * 1e6,
                                                          rel=1e-5)


def test_bigger_host_before_a_fleet():
    d = decide(scenario(offers=[BIG_BOX]))
    assert d.option == "g5.48xlarge" and d.verdict == "mirrored" and d.hosts == 1 and d.meets_goal
    assert d.reasons[0].code == "BIGGER_HOST"
    names = [o["name"] for o in d.to_json()["options"]]
    assert names == ["hardware", "g5.48xlarge"]


def test_prefer_cost_takes_the_cheapest_per_hour_and_simplicity_warns_about_it():
    # the fleet of 1-GPU hosts costs ~$6/hour for 1500/s; the 8-GPU box $16.29
    simple = decide(scenario(offers=[BIG_BOX]))
    assert "CHEAPER_OPTION" in [f.code for f in simple.warnings]
    cheap = decide(scenario(offers=[BIG_BOX], goal={**TEAM["goal"], "prefer": "cost"}))
    assert cheap.option == "hardware" and cheap.verdict == "multi_worker_mirrored"
    assert "CHEAPER_OPTION" not in cheap.codes


def test_prefer_cost_names_an_option_cheaper_per_example():
    """The team's fleet meets 1,500/s on 10 hosts for $10.10 an hour; one H100 host measured at
    0.02 s a step does 64 / 0.02 = 3,200/s for $11: $11 / (3,200 x 3,600) x 10^6 = $0.95 per
    million examples, about half the fleet's. prefer: cost takes the fleet (cheaper an hour, the
    contract's rule) and says what the faster box costs per example."""
    h100 = {"name": "h100", "usd_per_host_hour": 11.0, "device": "H100-80GB", "devices_per_host": 1,
            "max_hosts": 1, "step_seconds": 0.02}
    cheap = decide(scenario(offers=[h100], goal={**TEAM["goal"], "prefer": "cost"}))
    assert cheap.option == "hardware" and cheap.meets_goal
    fleet = cheap.to_json()["options"][0]
    assert fleet["usd_per_hour"] < 11.0
    [f] = [f for f in cheap.warnings if f.code == "CHEAPER_PER_EXAMPLE"]
    assert "h100 meets the target with single_device on 1 host(s) at $0.95 per million examples" in f.message
    assert "STEP_TIME_ESTIMATED" not in f.message  # its step was measured there
    # prefer: simplicity takes the one device, and has nothing to add about it
    simple = decide(scenario(offers=[h100]))
    assert simple.option == "h100" and "CHEAPER_PER_EXAMPLE" not in simple.codes


def test_tpus_on_offer_are_a_port_not_a_free_rung():
    """A GPU team offered TPUs: with static shapes the slice is taken, and the reason says it is a
    port; with dynamic shapes the port comes first, so the team's multi-worker plan is kept and
    the cheaper TPUs are named with the port they need."""
    team = {"workload": {"params": 110e6, "optimizer": "adamw", "per_device_batch": 32, "step_seconds": 0.12,
                         "input_wait_seconds": 0.002, "mixed_precision": True, "activation_bytes_per_example": 0},
            "hardware": {"device": "A100-80GB", "devices_per_host": 8, "intra_host": None, "inter_host_gbps": 100,
                         "max_hosts": 4, "usd_per_host_hour": 32},
            "goal": {"target_examples_per_second": 4000}}
    tpus = [{"name": "v5e", "usd_per_host_hour": 10, "device": "TPU-v5e-8", "devices_per_host": 8, "max_hosts": 4,
             "step_seconds": 0.1}]
    static = decide(valid_scenario(**team, offers=tpus))
    assert static.option == "v5e" and static.verdict == "tpu" and static.meets_goal
    assert static.reasons[0].code == "TPU_OFFERED" and "a move to TPUs is a port" in static.reasons[0].message
    dynamic = decide(valid_scenario(**{**team, "workload": {**team["workload"], "dynamic_shapes": True}},
                                    offers=tpus))
    assert dynamic.option == "hardware" and dynamic.verdict == "multi_worker_mirrored" and dynamic.meets_goal
    [f] = [f for f in dynamic.warnings if f.code == "CHEAPER_OPTION"]
    assert f.message.startswith("v5e meets the target with tpu") and "after a static-shape port" in f.message


def test_over_budget_rules_an_option_out():
    # the team's fleet meets 1500/s on 10 hosts ($10.10 an hour); the big box costs $16.29
    d = decide(scenario(offers=[BIG_BOX], goal={**TEAM["goal"], "max_usd_per_hour": 12}))
    assert d.option == "hardware" and d.meets_goal
    assert "OVER_BUDGET" in [f.code for f in d.reasons]  # it changed the choice
    # a budget nothing meets: the cheapest that meets the target, and it says so
    tight = decide(scenario(offers=[BIG_BOX], goal={**TEAM["goal"], "max_usd_per_hour": 5}))
    assert tight.option == "hardware" and "every option costs more" in tight.reasons[0].message


def test_bigger_device_when_the_model_does_not_fit_the_team_device():
    # 2 B parameters with Adam: 32 GB of state, over an A10G's 24 GB, under an A100-80GB's 72 usable
    big_model = {**TEAM["workload"], "params": 2e9, "optimizer": "adam", "activation_bytes_per_example": 1e6}
    offer = {"name": "a100", "usd_per_host_hour": 4.1, "device": "A100-80GB", "devices_per_host": 1,
             "max_hosts": 1, "step_seconds": 0.5}
    d = decide(scenario(workload=big_model, offers=[offer], goal={"target_examples_per_second": 100}))
    assert d.option == "a100" and d.verdict == "single_device" and "BIGGER_DEVICE" in d.codes
    # no bigger device on offer: it stays needs_sharding, with what each device would hold
    alone = decide(scenario(workload=big_model, goal={"target_examples_per_second": 100}))
    assert alone.verdict == "needs_sharding" and alone.sharding
    four = next(x for x in alone.sharding if x["devices"] == 4)
    # weights 8 GB + Adam's 16 GB of slots + gradients 8 GB = 32 GB, split four ways, plus activations
    assert four["bytes_per_device"] == pytest.approx(32e9 / 4 + 1e6 * 64)


def test_another_device_without_a_step_is_scaled_and_says_so():
    offer = {**BIG_BOX, "name": "a100-box", "device": "A100-80GB", "intra_host": "nvlink", "usd_per_host_hour": 33.0}
    s = parse_scenario(scenario(offers=[offer]))
    from rung.ladder.options import option_scenarios
    opt = option_scenarios(s)[1]
    # float32 on both, TF32 tensor cores at the same utilisation: compute x 62.5 / 156 TFLOPS
    a10g, a100 = catalog.lookup("A10G"), catalog.lookup("A100-80GB")
    ratio = (a10g.throughput.tf32) / (a100.throughput.tf32)
    # the compute (0.21 s less the 5 ms input wait) scales; the input wait stays
    assert opt.estimated and opt.scenario.workload.step_seconds == pytest.approx(0.205 * ratio + 0.005)
    assert estimate.scale_compute(1.0, a10g, a100, "float32", False) == pytest.approx(ratio)
    d = decide(scenario(offers=[offer], goal={"target_examples_per_second": 2500}))
    assert d.option == "a100-box" and "STEP_TIME_ESTIMATED" in [f.code for f in d.warnings]


def test_an_offers_device_takes_the_update_and_the_mirrored_copy_by_memory_bandwidth():
    """Of the team's measured step, the optimizer's update and the table copied under mirrored
    variables are memory traffic: on the offer's device they move by the two datasheets'
    bandwidths (A10G 600 GB/s, A100-80GB 2,039 GB/s), the rest of the compute by arithmetic.
    By hand: 0.21 s less 5 ms of input wait = 0.205 s of compute, 0.1 s of it the update:
    0.105 x 62.5/156 + 0.1 x 600/2039 = 0.04207 + 0.02943 s, + the 5 ms wait; the 40 ms copy
    under mirrored variables 40 x 600/2039 = 11.77 ms."""
    offer = {**BIG_BOX, "name": "a100-box", "device": "A100-80GB", "intra_host": "nvlink", "usd_per_host_hour": 33.0}
    from rung.ladder.options import option_scenarios
    w = {**TEAM["workload"], "input_wait_seconds": 0.005, "optimizer_update_seconds": 0.1,
         "strategy_step_extra_seconds": 0.04}
    opt = option_scenarios(parse_scenario(scenario(offers=[offer], workload=w)))[1].scenario.workload
    assert opt.step_seconds == pytest.approx(0.105 * 62.5 / 156 + 0.1 * 600 / 2039 + 0.005, rel=1e-4)
    assert opt.optimizer_update_seconds == pytest.approx(0.1 * 600 / 2039, rel=1e-4)
    assert opt.strategy_step_extra_seconds == pytest.approx(0.04 * 600 / 2039, rel=1e-4)


def test_strategy_options_are_in_every_decision():
    mirrored = decide(valid_scenario())
    assert mirrored.verdict == "mirrored"
    assert mirrored.strategy_options == {"cross_device_ops": "NcclAllReduce"}
    assert "STRATEGY_OPTIONS" in [f.code for f in mirrored.reasons]
    mwms = decide(valid_scenario(goal={"target_examples_per_second": 20000}))
    assert mwms.strategy_options == {"communication": "NCCL", "timeout_seconds": 600}
    # cross-device ops by hand: 102.4 MB over NVLink 300 GB/s at 0.77, 8 devices
    from rung.ladder.strategy_options import cross_device_seconds
    from rung.model.comm import DEFAULT_LINKS
    t = cross_device_seconds(parse_scenario(valid_scenario()), 8, DEFAULT_LINKS)
    bw = 300e9 * 0.77
    assert t["NcclAllReduce"] == pytest.approx(1.75 * 102.4e6 / bw + 14 * 5e-6)
    assert t["HierarchicalCopyAllReduce"] == pytest.approx(6 * 102.4e6 / bw + 6 * 5e-6)
    assert t["ReductionToOneDevice"] == pytest.approx(14 * 102.4e6 / bw + 2 * 5e-6)


def test_a_budget_without_offers_is_checked_against_the_teams_own_plan():
    """15,000 ex/s takes two hosts of 8 at $32.77, $65.54 an hour: over $40, which pays for
    one host (the mirrored rung's 8 devices, predicted as such); over $20, which pays for
    none; within $70, nothing is said."""
    def budgeted(budget):
        return decide(valid_scenario(hardware={"usd_per_host_hour": 32.77},
                                     goal={"target_examples_per_second": 15000, "max_usd_per_hour": budget}))
    d = budgeted(40)
    assert d.verdict == "multi_worker_mirrored" and d.hosts == 2
    over = next(f.message for f in d.reasons if f.code == "OVER_BUDGET")
    assert "costs $65.54 an hour, over the budget of $40.00; it pays for 1 host(s)" in over
    from rung import units as u
    from rung.model import throughput
    s = parse_scenario(valid_scenario(goal={"target_examples_per_second": 15000}))
    one_host = throughput.predict_sync(s, "mirrored", 1, 8).examples_per_second
    assert f"predicted at {u.rate(one_host)}, under the target of 15,000 ex/s" in over
    assert [f.code for f in d.reasons].index("OVER_BUDGET") == 1
    assert "the budget does not pay for one host" in next(f.message for f in budgeted(20).reasons
                                                          if f.code == "OVER_BUDGET")
    assert "OVER_BUDGET" not in [f.code for f in budgeted(70).reasons]


def test_a_parameter_server_plan_pays_for_its_cpu_hosts_when_their_price_is_given():
    """A recommender on one-GPU hosts at $1.01: parameter servers, W workers and P ps tasks.
    Priced: W x 1.01 + (P + 1) x 0.68 (the ps tasks and the coordinator), in the options and
    against the budget; unpriced, the workers alone, and PS_HOSTS_NOT_PRICED says so."""
    def recommender(budget=None, **hw):
        return decide(valid_scenario(
            workload={"params": 2.0e9, "embedding_params": 1.95e9, "optimizer": "adagrad", "per_device_batch": 2048,
                      "step_seconds": 0.04, "input_wait_seconds": 0.0, "activation_bytes_per_example": 0},
            hardware={"device": "A10G", "devices_per_host": 1, "intra_host": None, "inter_host_gbps": 25,
                      "max_hosts": 32, "usd_per_host_hour": 1.01, **hw},
            goal={"target_examples_per_second": 200000, "max_usd_per_hour": budget}))
    bare = recommender()
    assert bare.verdict == "parameter_server" and bare.ps_tasks >= 1
    assert bare.options[0]["usd_per_hour"] == pytest.approx(bare.hosts * 1.01)
    assert f"{bare.hosts} worker host(s), {bare.ps_tasks} ps task(s) and a coordinator" in next(
        f.message for f in bare.warnings if f.code == "PS_HOSTS_NOT_PRICED")
    priced = recommender(usd_per_ps_host_hour=0.68)
    assert priced.options[0]["usd_per_hour"] == pytest.approx(priced.hosts * 1.01 + (priced.ps_tasks + 1) * 0.68)
    assert "PS_HOSTS_NOT_PRICED" not in [f.code for f in priced.warnings]
    # the CPU hosts count against the budget: the workers alone would be within it
    workers = priced.hosts * 1.01
    tight = recommender(usd_per_ps_host_hour=0.68, budget=workers + 0.5)
    assert "CPU hosts for its ps tasks and coordinator at $0.68" in next(
        f.message for f in tight.reasons if f.code == "OVER_BUDGET")


def test_a_custom_device_is_a_gpu_unless_declared_a_cpu():
    """A card the catalog lacks (`device: custom`) all-reduces with NCCL like any GPU; a CPU
    device (what rung writes for the machine it ran on) cannot, and takes the fastest other
    cross_device_ops. Same host, same numbers: NCCL's ring moves 2(n-1)/n of the bytes."""
    hw = {"device": "custom", "device_memory_gib": 24, "devices_per_host": 8, "intra_host": "pcie",
          "intra_host_gbps": 128, "max_hosts": 1}
    goal = {"target_examples_per_second": 4 * 256 / 0.21}
    gpu = decide(valid_scenario(hardware=hw, goal=goal))
    cpu = decide(valid_scenario(hardware={**hw, "accelerator": "cpu"}, goal=goal))
    assert gpu.verdict == cpu.verdict == "mirrored"
    assert gpu.strategy_options == {"cross_device_ops": "NcclAllReduce"}
    assert cpu.strategy_options["cross_device_ops"] != "NcclAllReduce"
    assert gpu.prediction.examples_per_second > cpu.prediction.examples_per_second
    assert "NCCL needs GPUs" in next(f.message for f in cpu.reasons if f.code == "STRATEGY_OPTIONS")


def test_parameter_servers_partition_a_large_table_across_tasks():
    d = decide(valid_scenario(workload={"params": 4.05e9, "embedding_params": 4e9, "optimizer": "adagrad",
                                        "activation_bytes_per_example": 0},
                              hardware={"device": "V100-16GB", "devices_per_host": 1, "intra_host": None,
                                        "max_hosts": 16, "host_memory_gib": 16},
                              goal={"target_examples_per_second": 5000}))
    assert d.verdict == "parameter_server" and d.ps_tasks > 1
    assert d.strategy_options["variable_partitioner"] == f"MinSizePartitioner(min_shard_bytes=262144, " \
                                                         f"max_shards={d.ps_tasks})"


@pytest.mark.parametrize("offers, goal, words", [
    ([BIG_BOX, BIG_BOX], {}, "offers.1.name"),
    ([{**BIG_BOX, "name": "hardware"}], {}, "offers.0.name"),
    ([{**BIG_BOX, "usd_per_host_hour": -1}], {}, "offers.0.usd_per_host_hour"),
    ([{k: v for k, v in BIG_BOX.items() if k != "usd_per_host_hour"}], {}, "offers.0.usd_per_host_hour"),
    ([{**BIG_BOX, "step_seconds": 0}], {}, "offers.0.step_seconds"),
    ([{**BIG_BOX, "bogus": 1}], {}, "offers.0.bogus"),
    ([{**BIG_BOX, "device": "Z100"}], {}, "offers.0.device"),
    ([], {"prefer": "speed"}, "goal.prefer"),
    ([], {"max_usd_per_hour": 0}, "goal.max_usd_per_hour"),
])
def test_bad_offers_name_the_field(offers, goal, words):
    with pytest.raises(InputError) as e:
        parse_scenario(scenario(offers=offers, goal={**TEAM["goal"], **goal}))
    assert words in str(e.value)


def test_ten_offers_decide_without_tensorflow_and_fast():
    # speed itself is measured in benchmarks/bench_advise.py; here: every offer decided, once each
    offers = [{**BIG_BOX, "name": f"box{i}", "devices_per_host": 1 + i % 8, "usd_per_host_hour": 2.0 + i}
              for i in range(10)]
    d = decide(scenario(offers=offers))
    assert len(d.options) == 11 and all(o["verdict"] for o in d.options)
    assert not math.isnan(d.prediction.examples_per_second)


def test_the_report_shows_the_options_side_by_side_before_the_ladder():
    import io

    from rich.console import Console

    from rung.model.memory import usable_device_bytes
    from rung.report.terminal import render

    s = parse_scenario(scenario(offers=[BIG_BOX]))
    d = rung.advise(s)
    out = io.StringIO()
    render(s, d, usable_device_bytes(s.device_memory_bytes), Console(file=out, width=160))
    text = out.getvalue()
    assert text.index("Options") < text.index("The ladder, bottom up")
    for cell in ("hardware", "g5.48xlarge", "16.29", "10.10", "chosen"):
        assert cell in text, cell
    # the ladder is the chosen box's: 8 A10Gs in one host
    assert "A10G × 8 per host" in text
    assert "cross_device_ops=tf.distribute.NcclAllReduce()" in text


def test_bad_offers_exit_2_with_one_line(tmp_path):
    import subprocess
    import sys

    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(offers=[BIG_BOX, BIG_BOX])))
    r = subprocess.run([sys.executable, "-m", "rung", "advise", "--scenario", str(path), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and "offers.1.name" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
