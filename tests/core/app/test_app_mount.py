"""A browser that has dropped a widget's value mounts it at the view's value, not at the widget's first option.

Streamlit's browser side mounts a widget whose value it no longer holds at the default the server drew it with,
and sends that default back on the next rerun. Under load every sidebar control of the Explorer did so at once
(fedmf, d 2, the slowest links) during the classroom sweep. Each keyed widget is therefore drawn with its
current value as its default (`labcore.app.mount`); these tests read that default from what the server sends.
"""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, mount_mismatches
from labcore.app.mount import at_current
from test_app import TINY, app


def test_every_explorer_control_mounts_at_the_links_value_and_after_changes():
    at = app({**TINY, "method": "fedmf", "dim": "16", "up_bits": "8", "bw_up": "2.5", "data_skew": "0.5",
              "b_as_seed": "0", "_y": "ndcg"})
    assert not mount_mismatches(at)
    at.selectbox(key="explorer.method").set_value("colr").run()  # shows the rank slider, drawn for the first time
    at.slider(key="explorer.rank").set_value(3).run()
    at.select_slider(key="explorer.dim").set_value(32).run()
    assert not at.exception
    assert at.slider(key="explorer.rank").value == 3 and at.select_slider(key="explorer.dim").value == 32
    assert not mount_mismatches(at)


def test_compare_mounts_its_controls_and_options_at_their_values():
    at = app({"rounds": "2", "synthetic_size": "tiny", "_values": "2,8", "_y": "ndcg", "_base": "0"}, page="compare")
    assert not mount_mismatches(at)


def test_a_topic_pages_url_widgets_mount_at_their_values():
    """(Every topic page is checked at its defaults in test_app's page walk.)"""
    wl = AppTest.from_file(str(ROOT / "labcore/wireless/page.py"), default_timeout=120)
    wl.query_params.update({"d": "20", "T": "60", "R": "4", "ku": "5"})
    wl.run()
    wl.slider(key="wireless.K2").set_value(7).run()
    assert not wl.exception and wl.slider(key="wireless.K2").value == 7
    assert not mount_mismatches(wl)


def test_at_current_names_the_keyword_and_refuses_an_unknown_widget():
    with pytest.raises(ValueError, match="widget must be one of"):
        at_current("color_picker", "k")


def test_a_slider_whose_range_follows_another_control_keeps_its_value_clamped_into_the_new_range():
    """FL algorithms: "clients a round" is 1-20 on the digits task and 1-10 on the quadratic one. Drawn at its
    current value, a 13 would otherwise outlive the switch and reach the link, which a reload then rejects."""
    at = AppTest.from_file(str(ROOT / "labcore/flalgos/page.py"), default_timeout=300)
    at.query_params.update({"rounds": "10", "steps": "1"})
    at.run()
    at.slider(key="flalgos.participation").set_value(13).run()
    assert at.slider(key="flalgos.participation").value == 13 and at.query_params["participation"] == "13"
    at.selectbox(key="flalgos.task").set_value("quadratic").run()
    assert not at.exception
    assert at.slider(key="flalgos.participation").value == 10 and "participation" not in at.query_params
    at.slider(key="flalgos.participation").set_value(4).run()
    at.selectbox(key="flalgos.task").set_value("digits").run()  # 4 fits the new range: kept
    assert at.slider(key="flalgos.participation").value == 4 and at.query_params["participation"] == "4"
    assert not mount_mismatches(at)
