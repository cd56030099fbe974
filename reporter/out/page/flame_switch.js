/* The switch between a flame graph's Python view and its every-native-frame
 * view on the report page (html.c writes it after the flame graphs, only
 * when a graph has both views): a click on button.native-switch shows one
 * and hides the other. This comment stays out of the page. */
Array.prototype.forEach.call(document.querySelectorAll('button.native-switch'),function(b){b.addEventListener('click',function(){var v=b.parentNode,py=v.querySelector('.python-view'),nat=v.querySelector('.native-view'),show=nat.hidden;nat.hidden=!show;py.hidden=show;b.textContent=show?'Show the Python view':'Show every native frame';});});
