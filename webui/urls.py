from django.urls import path

from webui import views

urlpatterns = [
    path("", views.home, name="home"),
    path("list", views.todo_list_page, name="todo-list"),
]
