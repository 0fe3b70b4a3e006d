"""Calibscope dashboard: a Streamlit multipage UI over :mod:`core` (``streamlit run dashboard/app.py``)."""
