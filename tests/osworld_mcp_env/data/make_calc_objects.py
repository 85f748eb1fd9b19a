"""Writes xlsx books whose pivot tables and charts LibreOffice itself made (needs a Python with ``uno``).

Usage: ``python3 make_calc_objects.py OUT_DIR PROFILE_DIR``. Starts a private headless
LibreOffice, builds each book through UNO as a user's clicks would, saves it as
xlsx and quits. Books (Sheet1 holds Region/Product/Sales, Sheet2 a pivot of Sales):

* ``region.xlsx`` and ``region_again.xlsx``: pivot rows = Region, a bar chart of Sales.
* ``product.xlsx``: pivot rows = Product, a line chart of Sales.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import uno
from com.sun.star.awt import Rectangle
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException

ROWS = [
    ("Region", "Product", "Sales"),
    ("East", "A", 10),
    ("West", "A", 20),
    ("East", "B", 5),
    ("West", "B", 7),
]
CONNECT_DEADLINE_S = 120


def prop(name: str, value: object) -> PropertyValue:
    p = PropertyValue()
    p.Name, p.Value = name, value
    return p


def connect(pipe: str):
    resolver = uno.getComponentContext().ServiceManager.createInstanceWithContext(
        "com.sun.star.bridge.UnoUrlResolver", uno.getComponentContext()
    )
    deadline = time.monotonic() + CONNECT_DEADLINE_S
    while True:
        try:
            return resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
        except NoConnectException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)  # LibreOffice is still starting: poll its pipe until the deadline


def build(desktop, path: str, row_field: int, diagram: str) -> None:
    doc = desktop.loadComponentFromURL("private:factory/scalc", "_blank", 0, (prop("Hidden", True),))
    sheets = doc.Sheets
    data = sheets.getByIndex(0)
    data.Name = "Sheet1"
    for r, row in enumerate(ROWS):
        for c, value in enumerate(row):
            cell = data.getCellByPosition(c, r)
            cell.setString(value) if isinstance(value, str) else cell.setValue(value)
    sheets.insertNewByName("Sheet2", 1)
    target = sheets.getByName("Sheet2")
    tables = target.getDataPilotTables()
    desc = tables.createDataPilotDescriptor()
    desc.setSourceRange(data.getCellRangeByName("A1:C5").getRangeAddress())
    fields = desc.getDataPilotFields()
    orientation = "com.sun.star.sheet.DataPilotFieldOrientation"
    fields.getByIndex(row_field).Orientation = uno.Enum(orientation, "ROW")
    sales = fields.getByIndex(2)
    sales.Orientation = uno.Enum(orientation, "DATA")
    sales.Function = uno.Enum("com.sun.star.sheet.GeneralFunction", "SUM")
    tables.insertNewByName("pivot", target.getCellByPosition(0, 0).getCellAddress(), desc)
    charts = data.getCharts()
    charts.addNewByName(
        "chart",
        Rectangle(8000, 1000, 10000, 7000),
        (data.getCellRangeByName("B1:C5").getRangeAddress(),),
        True,
        True,
    )
    chart = charts.getByName("chart").getEmbeddedObject()
    chart.setDiagram(chart.createInstance(diagram))
    doc.storeToURL(uno.systemPathToFileUrl(path), (prop("FilterName", "Calc MS Excel 2007 XML"),))
    doc.close(True)


def main(out_dir: str, profile: str) -> None:
    pipe = f"osworld_calc_objects_{os.getpid()}"
    office = subprocess.Popen(
        [
            "soffice",
            f"-env:UserInstallation={uno.systemPathToFileUrl(profile)}",
            "--headless",
            "--invisible",
            "--norestore",
            f"--accept=pipe,name={pipe};urp;",
        ]
    )
    try:
        desktop = connect(pipe).ServiceManager.createInstance("com.sun.star.frame.Desktop")
        build(desktop, os.path.join(out_dir, "region.xlsx"), 0, "com.sun.star.chart.BarDiagram")
        build(desktop, os.path.join(out_dir, "region_again.xlsx"), 0, "com.sun.star.chart.BarDiagram")
        build(desktop, os.path.join(out_dir, "product.xlsx"), 1, "com.sun.star.chart.LineDiagram")
        with contextlib.suppress(Exception):  # the bridge drops as LibreOffice quits; it was asked to
            desktop.terminate()
        office.wait(timeout=60)
    finally:
        if office.poll() is None:
            office.kill()
            office.wait()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
