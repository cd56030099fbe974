/* The flame graph's script (flame_svg.c), in every SVG's <script>: it reads
 * the frames back from the document (each <g class="f"> with data-x, data-w,
 * data-d and a <title>) to zoom on a click, search by regular expression or
 * text and show a frame's figures. Nothing in it comes from a trace. W, PAD
 * and FONT are flame_svg.c's WIDTH, PAD and FONT. This comment and lines
 * that start with // stay out of the SVG (reporter/out/page.mk). */
'use strict';
var W = 1200, PAD = 10, FONT = 12, total = 0, zx = 0, zw = 0, frames = [], details, matched,
    resetBtn, clearBtn, term, searching = null;
function nameOf(g) { return g.querySelector('title').textContent.split('\n')[0]; }
function init() {
  details = document.getElementById('details'); matched = document.getElementById('matched');
  resetBtn = document.getElementById('reset'); clearBtn = document.getElementById('clear');
  term = document.getElementById('term');
  var gs = document.querySelectorAll('g.f');
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    var fr = { g: g, x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'),
               d: +g.getAttribute('data-d'), name: nameOf(g), rect: g.querySelector('rect'),
               text: g.querySelector('text') };
    fr.fill = fr.rect.getAttribute('fill');
    frames.push(fr);
    if (fr.d === 0) total = fr.w;
    g.addEventListener('click', zoomTo.bind(null, fr));
    g.addEventListener('mouseover', function (e) {
      details.textContent = this.querySelector('title').textContent.replace('\n', ': ');
    });
    g.addEventListener('mouseout', function () { details.textContent = ' '; });
  }
  zx = 0; zw = total;
  resetBtn.addEventListener('click', function () { zoomTo(null); });
  if (term) term.addEventListener('input', function () {
    if (term.value) doSearch(term.value); else clearSearch();
  });
  clearBtn.addEventListener('click', clearSearch);
  document.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); askSearch(); }
    else if (e.key === 'Escape') { zoomTo(null); clearSearch(); }
  });
}
function label(fr, px) {
  var fit = Math.floor((px - 6) / (FONT * 0.59));
  if (fit < 3) return '';
  return fr.name.length <= fit ? fr.name : fr.name.substring(0, fit - 2) + '..';
}
function zoomTo(target) {
  var d0 = 0;
  if (target) { zx = target.x; zw = target.w; d0 = target.d; } else { zx = 0; zw = total; }
  var scale = (W - 2 * PAD) / (zw || 1);
  for (var i = 0; i < frames.length; i++) {
    var fr = frames[i], inside = fr.x >= zx && fr.x + fr.w <= zx + zw && fr.d >= d0,
        above = fr.d < d0 && fr.x <= zx && fr.x + fr.w >= zx + zw;
    if (!inside && !above) { fr.g.style.display = 'none'; continue; }
    fr.g.style.display = '';
    var x = above ? PAD : PAD + (fr.x - zx) * scale, w = above ? W - 2 * PAD : fr.w * scale;
    fr.rect.setAttribute('x', x.toFixed(2)); fr.rect.setAttribute('width', Math.max(w - 0.1, 0).toFixed(2));
    fr.text.setAttribute('x', (x + 3).toFixed(2)); fr.text.textContent = label(fr, w);
    fr.g.style.opacity = above ? '0.6' : '';
  }
  resetBtn.style.opacity = target ? '1' : '0.3';
}
function askSearch() {
  if (term && term.getBoundingClientRect().width > 0) { term.focus(); term.select(); return; }
  var t = window.prompt('Search frames (regular expression, or text)', searching || '');
  if (t) doSearch(t);
}
function doSearch(term) {
  var re = null;
  try { re = new RegExp(term); } catch (e) { re = null; }
  var spans = [];
  for (var i = 0; i < frames.length; i++) {
    var fr = frames[i];
    var hit = fr.d > 0 && (re ? re.test(fr.name) : fr.name.indexOf(term) >= 0);
    fr.rect.setAttribute('fill', hit ? 'rgb(230,0,230)' : fr.fill);
    if (hit) spans.push([fr.x, fr.x + fr.w]);
  }
  spans.sort(function (a, b) { return a[0] - b[0]; });
  var sum = 0, end = -1;
  for (var k = 0; k < spans.length; k++) {
    var s = Math.max(spans[k][0], end);
    if (spans[k][1] > s) { sum += spans[k][1] - s; end = spans[k][1]; }
  }
  searching = term;
  clearBtn.style.display = '';
  matched.textContent = 'Matched: ' + (total ? (100 * sum / total).toFixed(1) : '0') + '%';
}
function clearSearch() {
  for (var i = 0; i < frames.length; i++) frames[i].rect.setAttribute('fill', frames[i].fill);
  searching = null; clearBtn.style.display = 'none'; matched.textContent = ' ';
  if (term) term.value = '';
}
window.addEventListener('load', init);
