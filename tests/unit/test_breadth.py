"""run/breadth.py: the jobs a time limit leaves out are chosen breadth first."""

from gpuoverhead.run.breadth import left_out, order, spread


def test_groups_are_spread_ends_first_then_the_middles():
    assert spread(5) == [0, 4, 2, 1, 3]
    assert sorted(spread(9)) == list(range(9)) and spread(9)[:3] == [0, 8, 4]
    assert spread(1) == [0] and spread(0) == []


def test_every_group_gets_a_job_before_any_gets_a_second():
    # Five H of a crossover suite, five implementations each.
    found = order([5] * 5)
    assert found[:5] == [(0, 0), (4, 0), (2, 0), (1, 0), (3, 0)]
    assert {j for _, j in found[:5]} == {0} and len(found) == 25


def test_a_limit_for_half_leaves_out_the_later_jobs_of_every_group_not_whole_groups():
    left = left_out([5, 5], lambda job: 1.0, room=5.0)
    kept = {(b, j) for b in range(2) for j in range(5)} - set(left)
    assert {b for b, _ in kept} == {0, 1} and len(kept) == 5
    # An expensive job passed over for cheaper ones after it.
    assert left_out([2, 2], lambda job: 10.0 if job == (0, 1) else 1.0, 3.0) == [(0, 1)]
