"""Availability analytics over the controller's state-change log, on Spark (PySpark).

Layout (reading and writing stay at the edges; transforms are DataFrame -> DataFrame):

- ``schema``      the log's record schema and vocabulary (no Spark needed)
- ``ingest``      reading logs from any Hadoop URI; ``clean`` marks bad records
- ``transforms``  ``timeline`` (the one ordered pass), ``facts`` (what each output needs of
                  it, aggregated in the same pass), ``availability``, ``churn``,
                  ``controller``, ``imbalance``, ``steps`` (time-weighted buckets), ``period``
- ``outputs``     the fact pass, and the output datasets finished from its facts
- ``job``         the job: read, one fact pass, write outputs, report
- ``report``/``svg``  the HTML report with inline SVG charts, and the text summary
- ``generate``    synthetic state-change logs modelling real clusters
- ``cli``         ``run``/``generate``/``package`` (``zk-controller analyze ...``)

PySpark is an optional dependency (the ``spark`` extra) and is imported lazily.
"""
