"""The pages' Plotly figures and the time and y ranges they are drawn over."""
