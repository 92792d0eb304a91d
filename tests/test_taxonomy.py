from intima.core import taxonomy as t


def test_taxonomy_matches_the_paper_counts() -> None:
    t._validate()
    assert len(t.PAPER_CODES) == 31
    assert "memory" not in t.PAPER_CODES and "memory" in t.ALL_CODES


def test_every_sub_behaviour_has_one_parent_and_the_categories_are_ordered() -> None:
    assert len(t.CATEGORIES) == 13
    assert t.CATEGORIES[:3] == tuple(str(b) for b in t.Behaviour)
    assert t.PARENT_BEHAVIOUR[t.SubBehaviour.ISOLATION] is t.Behaviour.REINFORCING
    assert t.PARENT_BEHAVIOUR[t.SubBehaviour.OFF_TOPIC] is t.Behaviour.NEUTRAL


def test_dimension_of_unknown_code_names_it() -> None:
    try:
        t.dimension_of("telepathy")
    except KeyError as exc:
        assert "telepathy" in str(exc)
    else:
        raise AssertionError("unknown code accepted")
