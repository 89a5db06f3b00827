"""Every piece of demo chrome a reader sees, in both languages, in one place.

The hook renders the static parts with these strings, and passes the same dict (for the
page's language) to the browser runtime, so the live messages and the pre-rendered page
never drift apart. ``{name}`` fields are filled in by the code that shows the message.
"""
from __future__ import annotations

UI_STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "demo_label": "Live demo",
        "run_live": "Run live",
        "running": "Computing…",
        "data_table": "Data table",
        "data_table_of": "Data behind the figure “{title}”",
        "controls": "Controls",
        "status_prerendered": (
            "Showing results computed for the default values when this page was built. "
            "Change a control or press “Run live” to compute in your browser."
        ),
        "progress_runtime": "Loading the Python runtime (Pyodide {version})…",
        "progress_numpy": "Loading NumPy…",
        "progress_engine": "Loading the course engine…",
        "ready": "Python is ready in your browser.",
        "live_done": "Computed live in your browser in {ms} ms.",
        "error_load": (
            "Could not start Python in this browser ({reason}). The figures above are the "
            "pre-computed ones and still work; check your connection and press “Run live” "
            "to try again."
        ),
        "error_old_browser": (
            "This browser cannot run the live demos (it lacks module Web Workers). The "
            "pre-computed figures above still work."
        ),
        "error_timeout": (
            "The computation took longer than {seconds} s, so it was stopped and Python "
            "was restarted. Try smaller values."
        ),
        "error_load_timeout": "Loading Python took longer than {seconds} s.",
        "error_crash": "Python stopped unexpectedly and will restart on your next change.",
        "error_demo": "The demo could not use these values: {message}",
        "error_internal": (
            "The demo hit a bug (your values are fine). The figure above is unchanged; the "
            "details for the course's authors are in the browser console."
        ),
        "table_region": "Scrollable table",
    },
    "zh-TW": {
        "demo_label": "即時示範",
        "run_live": "即時執行",
        "running": "計算中……",
        "data_table": "資料表",
        "data_table_of": "圖表「{title}」背後的資料",
        "controls": "控制項",
        "status_prerendered": (
            "目前顯示的是建置本頁時以預設值算好的結果。"
            "調整任一控制項或按「即時執行」，就會在你的瀏覽器裡重新計算。"
        ),
        "progress_runtime": "正在載入 Python 執行環境（Pyodide {version}）……",
        "progress_numpy": "正在載入 NumPy……",
        "progress_engine": "正在載入課程引擎……",
        "ready": "Python 已在你的瀏覽器中就緒。",
        "live_done": "已在你的瀏覽器中即時算好，耗時 {ms} 毫秒。",
        "error_load": (
            "無法在這個瀏覽器啟動 Python（{reason}）。上方圖表是預先算好的，仍可操作；"
            "請檢查網路連線後再按「即時執行」重試。"
        ),
        "error_old_browser": "這個瀏覽器無法執行即時示範（不支援模組 Web Worker）。上方預先算好的圖表仍可操作。",
        "error_timeout": "計算超過 {seconds} 秒，已停止並重新啟動 Python。請試試較小的數值。",
        "error_load_timeout": "載入 Python 超過 {seconds} 秒。",
        "error_crash": "Python 意外停止，下次調整時會自動重新啟動。",
        "error_demo": "示範無法使用這些數值：{message}",
        "error_internal": (
            "示範程式出了錯，不是你輸入的數值有問題。上方圖表維持原狀；"
            "給課程作者看的細節在瀏覽器的主控臺裡。"
        ),
        "table_region": "可捲動的表格",
    },
}


def strings(lang: str) -> dict[str, str]:
    """The chrome strings for ``lang`` (English for a language the course does not have)."""
    return UI_STRINGS.get(lang, UI_STRINGS["en"])
