"""How the real Ironic behind the main job's scenarios (``run --ironic
real``, ``real_backend.RealIronicBackend``) deploys its nodes.

* **deploys** -- nodes deploy with the ``direct`` interface, which waits in
  ``wait call-back`` for an agent that never comes, or with ``fake``, which
  goes ``active`` (:func:`deploy_interfaces`).
* **the image** -- Nova sends a Glance image UUID, and there is no Glance:
  the backend wraps the driver's deploy patch
  (``GenericDriverFields.get_deploy_patch``) to send the harness's local
  HTTP image as ``<image_url>?glance=<uuid>`` with its sha256 instead
  (Ironic refuses an http image without a checksum; :func:`image_patch`);
  nothing else Nova sends is changed.  :func:`glance_id` gives the uuid
  back.

Standard library only: the player, in Nova's venv, imports it.
"""

from novaseries.scenarios.scenario import (
    ACT_IN_REBUILD_KINDS, ENDING_DEPLOY_ACTIONS)

#: The path of a deploy patch's image (``instance_info``'s image_source).
IMAGE_SOURCE = '/instance_info/image_source'


def deploy_interfaces(scenario, n):
    """The ``deploy_interface`` of each of ``n`` nodes at enrolment.

    A scenario that acts during the deploy needs deploys that wait:
    ``direct`` (waits in ``wait call-back``); its first step switches the
    nodes that are still free to ``fake`` (``RealIronicBackend.
    free_nodes_deploy``), so that a reschedule ends ACTIVE.  A scenario
    without an action, and a rebuild's boot, need deploys that end:
    ``fake`` (the rebuild's node is switched to ``direct`` once ACTIVE,
    ``RealIronicBackend.set_deploy_interface``; the kinds of
    ``scenario.ACT_IN_REBUILD_KINDS``).  A short outage of the API during
    the deploy (``scenario.ENDING_DEPLOY_ACTIONS``) needs a deploy that
    ends by itself once the API is back (nothing completes a real ``wait
    call-back``): ``fake``, and the outage comes during its ``deploying``
    (``play_real.RealScenarioTest._first_step_polls``).

    :param scenario: a ``scenario.Scenario``.
    :returns: a list of ``n`` interface names.
    """
    waits = (scenario.action is not None
             and scenario.action not in ENDING_DEPLOY_ACTIONS
             and scenario.kind not in ACT_IN_REBUILD_KINDS)
    return ['direct' if waits else 'fake'] * n


def has_image(patch):
    """The deploy patch sets an image (not a boot from volume)."""
    return any(op.get('path') == IMAGE_SOURCE for op in patch)


def image_patch(patch, info, missing=False):
    """The deploy patch with the local HTTP image: ``image_source`` ``U``
    becomes ``<image_url>?glance=U`` (the image server ignores the query;
    :func:`glance_id` gives ``U`` back) and the image's sha256 is added, in
    the same PATCH; the patch given is not changed.

    :param info: the harness's ``--ironic-info``: ``image_url``,
        ``missing_image_url``, ``image_sha256``.
    :param missing: send ``missing_image_url`` (which answers 404, with no
        image id in it: Ironic's last_error names the href, and it becomes
        the fault) as the first image instead.
    """
    out = []
    for op in patch:
        if op.get('path') == IMAGE_SOURCE:
            value = '%s?glance=%s' % (info['image_url'], op['value'])
            if missing:
                value, missing = info['missing_image_url'], False
            op = dict(op, value=value)
        out.append(op)
    if not has_image(out):
        return out      # boot from volume: no image
    return out + [
        {'op': 'add', 'path': '/instance_info/image_os_hash_algo',
         'value': 'sha256'},
        {'op': 'add', 'path': '/instance_info/image_os_hash_value',
         'value': info['image_sha256']}]


def glance_id(image_source):
    """The Glance image id behind an ``image_source`` the backend sent
    (``<image_url>?glance=<id>``); anything else unchanged."""
    if image_source and '?glance=' in image_source:
        return image_source.split('?glance=', 1)[1]
    return image_source
