"""Run the deployment on one machine without Docker: ``distrl airflow`` and ``distrl cluster``.

:mod:`~distrl_tasks.cluster.services` describes every service once (command, queue, settings);
the launcher (:mod:`~distrl_tasks.cluster.launcher`) starts them on loopback and
``tests/unit/test_docker_files.py`` checks that ``docker/compose.yaml`` agrees with it.
"""
