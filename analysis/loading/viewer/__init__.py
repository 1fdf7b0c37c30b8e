"""What the HTML report shows of single jobs: the job viewer's columns (``rounds``, held as
``job_rounds``), the option holding each target (``targets``), and a tree decoder's
decision path rebuilt for drawing (``paths``)."""
