"""The Streamlit app renders its pages without an exception (AppTest, no browser)."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT


def test_explorer_renders_and_reacts_to_the_rank_slider():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    low = at.metric[1].value
    at.slider(key="rank").set_value(8).run()
    assert not at.exception
    assert int(at.metric[1].value.replace(",", "")) > int(low.replace(",", ""))  # more rank, more bytes
