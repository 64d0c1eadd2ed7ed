"""Pictures of Crane IR: schedule Gantt charts, mesh heatmaps and Graphviz graph views.

Each picture is computed in two steps, so that the data can be tested and reused without a
plotting library:

* a pure function reads the IR and returns plain data: :func:`crane.viz.timeline.timeline`
  (states over time and the tiles of every layer), :func:`crane.viz.mesh_load.mesh_load`
  (SRAM per tile, bytes per NoC link and DRAM port), :func:`crane.viz.graphs.graph_view`
  and :func:`crane.viz.graphs.segment_view` (a :class:`crane.viz.dot.DotGraph`);
* a renderer turns that data into bytes: PNG or SVG with matplotlib (imported lazily, only
  when a picture is drawn), or DOT text.

:func:`crane.viz.picture.render_picture` is the one entry point the tools use::

    from crane.viz.picture import render_picture
    png = render_picture(module, "gantt", "png")

Missing prerequisites (a Gantt chart of an unscheduled module, a mesh picture before
placement) raise :class:`crane.viz.source.PictureError` with a message naming the pass
to add.
"""
