"""The intervals of analysis/stats.py on synthetic data with a known answer."""

from __future__ import annotations

import numpy as np
import pytest

from shadowreplay.analysis import stats


def _verdict(a_runs, b_runs, q, reps=600, seed=0, floor=None):
    ha, hb = stats.Hist.from_values(a_runs), stats.Hist.from_values(b_runs)
    ra = stats.quantile_replicates(ha, q, reps, stats.rng_for("a", seed))
    rb = stats.quantile_replicates(hb, q, reps, stats.rng_for("b", seed))
    return stats.estimate(ra, rb, needs=stats.needed(q), floor=floor)


def test_binned_quantiles_match_exact_ones():
    x = np.random.default_rng(1).lognormal(4, 0.8, 20_000)
    h = stats.Hist.from_values([x])
    for q in (0.01, 0.5, 0.9, 0.99, 0.999):
        assert h.quantile(q) == pytest.approx(np.quantile(x, q), rel=stats.REL_RES / 2 + 1e-9)


@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_identical_distributions_are_no_detectable_difference_in_about_95_percent(q):
    seeds = 160
    same = 0
    for s in range(seeds):
        r = np.random.default_rng(s)
        e = _verdict([r.lognormal(3, 0.6, 800)], [r.lognormal(3, 0.6, 800)], q, seed=s)
        same += e.verdict == stats.SAME
    # 95 % nominal; a binomial 99.9 % band around it for 160 seeds is about 0.89-0.99
    assert 0.88 <= same / seeds <= 1.0, same / seeds


@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_a_true_2x_change_is_found_with_the_right_sign(q):
    worse = better = 0
    for s in range(40):
        r = np.random.default_rng(100 + s)
        a = r.lognormal(3, 0.6, 600)
        worse += _verdict([a], [2 * r.lognormal(3, 0.6, 600)], q, seed=s).verdict == stats.WORSE
        better += _verdict([a], [0.5 * r.lognormal(3, 0.6, 600)], q, seed=s).verdict == stats.BETTER
    assert worse >= 38 and better >= 38


def test_the_interval_holds_the_true_ratio():
    hits = 0
    for s in range(100):
        r = np.random.default_rng(500 + s)
        e = _verdict([r.lognormal(3, 0.5, 1000)], [1.3 * r.lognormal(3, 0.5, 1000)], 0.95, seed=s)
        hits += e.ratio_ci[0] <= 1.3 <= e.ratio_ci[1]
    assert hits >= 88


def test_repeats_carry_run_to_run_noise():
    """Runs that drift (each run's scale drawn anew): resampling requests alone would call
    identical setups different far more often than 5 %; resampling whole runs does not."""
    same_runs = same_pooled = 0
    seeds = 60
    for s in range(seeds):
        r = np.random.default_rng(900 + s)

        def side():
            return [r.lognormal(3 + r.normal(0, 0.08), 0.5, 400) for _ in range(6)]

        a, b = side(), side()
        same_runs += _verdict(a, b, 0.5, seed=s).verdict == stats.SAME
        same_pooled += _verdict([np.concatenate(a)], [np.concatenate(b)], 0.5, seed=s).verdict == stats.SAME
    assert same_runs / seeds >= 0.8
    assert same_pooled / seeds < same_runs / seeds - 0.15


@pytest.mark.parametrize("runs", [2, 3])
def test_few_drifting_runs_are_no_false_alarm(runs):
    """Two or three runs a side that drift (each run's scale drawn anew, as a shared CPU does):
    resampling so few runs leaves most of their spread out (with two runs a side, a third of
    such A/A pairs had all of B's runs on one side of all of A's); the runs' own Welch interval
    keeps the A/A pair at about 95 % no detectable difference."""
    seeds = 300
    same = 0
    for s in range(seeds):
        r = np.random.default_rng(4000 + 10 * runs + s)

        def side():
            return [r.lognormal(3 + r.normal(0, 0.15), 0.4, 120) for _ in range(runs)]

        same += _verdict(side(), side(), 0.5, reps=400, seed=s).verdict == stats.SAME
    assert same / seeds >= 0.92, same / seeds  # resampling the runs alone: 0.78 (2 runs), 0.84 (3)


def test_few_runs_still_find_a_2x_change():
    found = 0
    for s in range(40):
        r = np.random.default_rng(7000 + s)
        a = [r.lognormal(3 + r.normal(0, 0.10), 0.4, 120) for _ in range(3)]
        b = [2 * r.lognormal(3 + r.normal(0, 0.10), 0.4, 120) for _ in range(3)]
        e = _verdict(a, b, 0.5, reps=400, seed=s)
        found += e.verdict == stats.WORSE and e.ratio_ci[0] <= 2 <= e.ratio_ci[1]
    assert found >= 36, found


def test_t_quantiles_match_the_tables():
    for df, t in [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (10, 2.2281), (30, 2.0423)]:
        assert stats.t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert stats.t_quantile(0.995, 3) == pytest.approx(5.8409, abs=1e-4)
    assert stats.t_quantile(0.025, 4) == pytest.approx(-2.7764, abs=1e-4)
    assert stats.t_quantile(0.975, 1e6) == pytest.approx(1.95996, abs=1e-4)


def test_run_interval_borrows_the_spread_for_a_single_run():
    lo, hi = stats.run_interval(np.array([10.0, 12.0]), np.array([14.0]), 0.95)
    # Student with 1 df: 13 -> 14 - 11 = 3 +- 12.706 * sqrt(2 * 1.5)
    w = 12.7062 * np.sqrt(2.0 * 1.5)
    assert (lo, hi) == pytest.approx((3 - w, 3 + w), abs=1e-3)
    assert stats.run_interval(np.array([10.0]), np.array([14.0]), 0.95) is None


def test_too_few_values_for_the_quantile():
    r = np.random.default_rng(3)
    e = _verdict([r.lognormal(3, 0.6, 68)], [3 * r.lognormal(3, 0.6, 68)], 0.99)
    assert e.verdict == stats.TOO_FEW and e.needs == 500
    assert stats.needed(0.95) == 100 and stats.needed(0.5) == 10


def test_a_change_no_larger_than_the_aa_floor_is_noise():
    r = np.random.default_rng(4)
    a, b = r.lognormal(3, 0.4, 3000), 1.2 * r.lognormal(3, 0.4, 3000)
    assert _verdict([a], [b], 0.5).verdict == stats.WORSE
    assert _verdict([a], [b], 0.5, floor=1.25).verdict == stats.NOISE
    assert _verdict([a], [b], 0.5, floor=1 / 1.25).verdict == stats.NOISE
    assert _verdict([a], [b], 0.5, floor=1.02).verdict == stats.WORSE


def test_the_detectable_band_of_an_aa_pair_predicts_what_is_found():
    """The band `detectable` reads from an A/A pair of demo size (130 per side, P95): a true
    change well beyond it is found in nearly every seed, one well inside it rarely."""
    beyond = inside = beyond_down = inside_down = 0
    seeds = 40
    for s in range(seeds):
        r = np.random.default_rng(700 + s)

        def side(scale=1.0):
            return [scale * r.lognormal(3, 0.6, 130)]

        a = side()
        aa = _verdict(a, side(), 0.95, seed=s)
        down, up = stats.detectable(aa.ratio, aa.ratio_ci)
        assert 0 < down < 1 < up
        beyond += _verdict(a, side(up * 1.4), 0.95, seed=s, floor=aa.ratio).verdict == stats.WORSE
        inside += _verdict(a, side(1 + (up - 1) / 3), 0.95, seed=s, floor=aa.ratio).verdict == stats.WORSE
        beyond_down += _verdict(a, side(down / 1.4), 0.95, seed=s, floor=aa.ratio).verdict == stats.BETTER
        inside_down += _verdict(a, side(1 - (1 - down) / 3), 0.95, seed=s, floor=aa.ratio).verdict == stats.BETTER
    assert beyond >= 0.8 * seeds and beyond_down >= 0.8 * seeds, (beyond, beyond_down)
    assert inside <= 0.2 * seeds and inside_down <= 0.2 * seeds, (inside, inside_down)


def test_detectable_band_arithmetic():
    # an A/A ratio of 1 with a +-25 % interval: a change must leave [0.8, 1.25] of the truth
    assert stats.detectable(1.0, (0.8, 1.25)) == pytest.approx((0.8, 1.25))
    # an A/A pair that differed by 1.1x widens the band by that much on both sides
    down, up = stats.detectable(1.1, (0.88, 1.375))
    assert down == pytest.approx(0.8 / 1.1) and up == pytest.approx(1.25 * 1.1)
    with pytest.raises(ValueError):
        stats.detectable(1.0, (1.1, 1.3))


def test_shares():
    g = stats.rng_for("s")
    a = stats.share_replicates([100], [1000], 1000, g)
    b = stats.share_replicates([200], [1000], 1000, g)
    e = stats.estimate(a, b, lower_is_better=True)
    assert e.a == 0.1 and e.b == 0.2 and e.verdict == stats.WORSE
    assert e.delta_ci[0] < 0.1 < e.delta_ci[1]
    e = stats.estimate(a, b, lower_is_better=False)
    assert e.verdict == stats.BETTER
