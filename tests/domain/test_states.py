import pytest

from gateway.domain.states import FINAL_STATES, JobState, can_transition

ORDER = [JobState.ACCEPTED, JobState.STAGING_IN, JobState.QUEUED, JobState.RUNNING,
         JobState.STAGING_OUT]


@pytest.mark.parametrize("i", range(len(ORDER)))
def test_forward_only(i: int) -> None:
    current = ORDER[i]
    for j, target in enumerate(ORDER):
        assert can_transition(current, target) is (j > i)


@pytest.mark.parametrize("current", ORDER)
@pytest.mark.parametrize("final", sorted(FINAL_STATES))
def test_any_active_state_may_end(current: JobState, final: JobState) -> None:
    assert can_transition(current, final)


@pytest.mark.parametrize("final", sorted(FINAL_STATES))
def test_finals_are_final(final: JobState) -> None:
    assert not any(can_transition(final, target) for target in JobState)
