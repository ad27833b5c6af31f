"""Deadlock between CellDatabases' _cell_lock and DatabaseWriteLock.

nova 34.0.0, threading mode only (OS_NOVA_DISABLE_EVENTLET_PATCHING=True,
where nova.tests.fixtures.CellDatabases installs DatabaseWriteLock):

  T1 holds _cell_lock for reading (inside target_cell(cell1)) and wants
     cell1's DatabaseWriteLock (a write);
  T2 holds cell1's DatabaseWriteLock (Service.save -> service_update, an
     untargeted context) and wants _cell_lock for reading (its nested
     service_get -> get_context_manager);
  T3 wants _cell_lock for writing (target_cell(cell0): quota counting,
     instance listing); fasteners' ReaderWriterLock then admits no new
     reader, so T2 waits for T3, T3 for T1, T1 for T2.
"""
import sys
import threading

from nova import context
from nova.db.main import api as db
from nova import objects
from nova import test


class CellDatabasesDeadlock(test.TestCase):

    def test_deadlock(self):
        ctxt = context.get_admin_context()
        svc = objects.Service(ctxt, host='h1', binary='nova-compute',
                              topic='compute')
        svc.create()
        t2_in_writer, t1_in_cell, go = (threading.Event(), threading.Event(),
                                        threading.Event())
        real_get = db.service_get

        def service_get(context, *args, **kwargs):
            # runs inside service_update's writer transaction
            t2_in_writer.set()
            go.wait(10)
            return real_get(context, *args, **kwargs)

        self.stub_out('nova.db.main.api.service_get', service_get)

        def t2():
            svc.report_count = 1
            svc.save()          # untargeted context: global DB state

        def t1():
            with context.target_cell(ctxt, self.cell_mappings['cell1']) as c:
                t1_in_cell.set()
                go.wait(10)
                objects.Service(c, host='h2', binary='nova-compute',
                                topic='compute').create()

        def t3():
            with context.target_cell(ctxt, self.cell_mappings['cell0']):
                pass

        threads = [threading.Thread(target=t2, name='T2-service-save',
                                    daemon=True)]
        threads[0].start()
        self.assertTrue(t2_in_writer.wait(10))
        threads.append(threading.Thread(target=t1, name='T1-target-cell1',
                                        daemon=True))
        threads[1].start()
        self.assertTrue(t1_in_cell.wait(10))
        threads.append(threading.Thread(target=t3, name='T3-target-cell0',
                                        daemon=True))
        threads[2].start()
        threads[2].join(1)      # T3 is now a pending writer
        go.set()
        for t in threads:
            t.join(10)
        stuck = [t.name for t in threads if t.is_alive()]
        # (before the fixtures' clean-up, which the stuck threads block)
        print('stuck threads: %s' % stuck, file=sys.__stderr__, flush=True)
        self.assertEqual([], stuck, 'deadlocked: %s' % stuck)
