"""The report as one tree of blocks, rendered to HTML and Markdown.

- ``format``: every number's display text and kind (:class:`~.format.Num`), percentages and
  counts with a noun.
- ``blocks``: the frozen building blocks (sections, paragraphs, tables, figures, ...) and the
  :class:`~.blocks.Document` that holds them, with its contract in ``Document.check``.
- ``sections``: each section of the report defined once, from the view model to a Section.
- ``html`` and ``markdown``: the two renderers; ``page``: the Jinja2 page skeleton around them.
"""
