"""The PDF's sections, one module each, in the order ``report.pdf.build_report`` lays them out:
the cover and executive summary (``summary``; a comparison's ranking first, ``compare``), the
client profile used (``client_profile``), quality and budget (``budget``), the scenario
(``scenario``), the charts (``charts``), assumptions and sensitivities (``assumptions``), the
appendices: calibration (``calibration``), the article (``article``), sources (``sources``),
the launch command (``deploy``), and the charts that could not be drawn (``charts``)."""
